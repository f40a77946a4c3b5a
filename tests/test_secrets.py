"""Secrets never reach an output: planted credentials, grepped for in every file run and diff write and on the console.

Two kinds are planted. The harness user's own (provider keys, a cloud secret, a
token, a proxy password in the environment) must never reach the agent, so
never any output. The agent's, one of every kind the redactor knows (a
credential-like `NAME=value`, GitHub classic and fine-grained tokens, an AWS key
id and secret, a Slack token, Anthropic and OpenAI keys, a private-key block),
printed on its stdout and on its stderr, sent in request headers under custom
names and in the query string, passed in the target's environment, and written
into its system prompt, must be redacted wherever they are recorded: the
journal, the launch journal, results.json, summary.md, junit.xml,
comparison.json, report.html, the console. Only the request body keeps them:
bodies are journaled byte for byte, which the README lists as not guaranteed.

The identity line carrying a secret makes identity_stable fail, so the check's
evidence quotes it in every report: each report's own redaction is what keeps
it out, not the redaction of the agent's output tails before them.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.redaction import (
    REDACTED,
    RedactingStream,
    is_secret_name,
    redact,
    redact_headers,
    redact_json,
    redact_query,
    redact_xml,
    redacting_console,
    secret_spans,
)
from harness.report.console import ConsoleProgress
from harness.report.html_text import attr, esc
from harness.results import StepResult
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from harness.isolation.workspace import FAKE_API_KEY

HARNESS = Path(sys.executable).with_name("harness")
MARK = "PLANTED"  # in every planted secret: no output may show it, whole or in part

USER_SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDuserKEY0123456789abcdef",
    "OPENAI_API_KEY": "sk-proj-PLANTEDopenaiKEY0123456789",
    "AWS_SECRET_ACCESS_KEY": "PLANTEDawsSECRETwJalrXUtnFEMI0123",
    "GITHUB_TOKEN": "ghp_PLANTEDgithubTOKEN0123456789abcdefgh",
    "HTTPS_PROXY": "http://corp:PLANTEDproxyPASS@proxy.example:3128",
}


def planted(tag: str) -> dict[str, str]:
    """One secret of every kind, each carrying MARK and the tag of where it is planted."""
    mark = MARK + tag
    return {
        "password": f"hunter2-{mark}-pw",
        "service_token": f"{mark}svcTOKEN42",
        "client_secret": f"{mark} client secret",
        "aws_secret": f"wJalrXUtnFEMI/K7MDENG/{mark}KEYabcd",
        "github": "ghp_" + (mark + "0123456789abcdefghijklmnopqrstuvwxyz")[:36],
        "github_pat": f"github_pat_11{mark}0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        "aws_key_id": "AKIA" + (mark.upper() + "0123456789")[:16],
        "slack": f"xoxb-123456789012-1234567890123-{mark}abcdefgh",
        "anthropic": f"sk-ant-api03-{mark}-0123456789abcdefghij-AA",
        "openai_project": f"sk-proj-{mark}Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8",
        "openai_legacy": "sk-" + (mark + "a1B2c3D4e5F6g7H8i9J0" * 3)[:48],
        "private_key_line": f"MIIEowIBAAKCAQEA{mark}xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPBaNaaa0ZZZ"[:64],
    }


# How an agent's debug output shows each kind: the words around a secret are what a reviewer reads.
LINES = {
    "password": "DATABASE_PASSWORD={}",
    "service_token": "export MY_SERVICE_TOKEN={}",
    "client_secret": 'config {{"client_secret": "{}"}}',
    "aws_key_id": "using aws key id {} today",
    "aws_secret": "aws_secret_access_key = {}",
    "github": "pushing with {}, then",
    "github_pat": "fine-grained {}.",
    "slack": "slack {} posted",
    "anthropic": "model key {}",
    "openai_project": "openai ({})",
    "openai_legacy": "legacy {}",
    "private_key_line": "-----BEGIN RSA PRIVATE KEY-----\n{}\nZmFrZQ==\n-----END RSA PRIVATE KEY-----",
}
SHOWN = {kind: line.format(REDACTED) for kind, line in LINES.items()}
SHOWN["private_key_line"] = f"-----BEGIN RSA PRIVATE KEY-----{REDACTED}-----END RSA PRIVATE KEY-----"


def printed(secrets: dict[str, str]) -> str:
    return "\n".join(LINES[kind].format(secret) for kind, secret in secrets.items()) + "\n"


AGENT = '''\
import json, os, sys, urllib.parse, urllib.request, uuid
planted = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.json")))
args = sys.argv[1:]
prompt = args[args.index("-p") + 1]
# identity_stable fails on this agent: its identity line carries a secret that differs per step
identity = "You are Leaky Agent." if "--stable" in args else "You are Leaky Agent, deploy key " + planted["body"][prompt]
body = {"model": "m", "max_tokens": 16, "system": [{"type": "text", "text": identity + "\\n\\n" + os.environ["APPEND"]}],
        "messages": [{"role": "user", "content": prompt}]}
header, query = planted["header"], planted["query"]
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?" + urllib.parse.urlencode(
        {"api_key": query["service_token"], "x_custom_token": query["password"], "debug": query["anthropic"],
         "gh": query["github"], "beta": "true"}),
    data=json.dumps(body).encode(),
    headers={"authorization": "Bearer " + header["service_token"], "x-api-key": header["anthropic"],
             "cookie": "session=" + header["password"] + "; theme=dark", "openai-api-key": header["openai_project"],
             "x-custom-token": header["client_secret"], "x-debug-github": header["github"],
             "x-debug-slack": header["slack"], "x-trace": "Bearer " + header["openai_legacy"],
             "content-type": "application/json"})
urllib.request.urlopen(request, timeout=30).read()
print(planted["stderr"], file=sys.stderr)
print(planted["stdout"])
print(json.dumps({"session_id": str(uuid.uuid4())}))
if "--fail" in args:
    print("fatal: Bearer " + planted["header"]["service_token"], file=sys.stderr)
    sys.exit(1)
'''

ENV_SECRETS = planted("ENV")
TARGET_ENV = {  # reach the launch journal: steering variables, one by its name, two by their values' shape
    "ANTHROPIC_CUSTOM_HEADERS": f"x-custom-token: {ENV_SECRETS['service_token']}",
    "CLAUDE_CODE_OAUTH_TOKEN": ENV_SECRETS["password"],
    "OPENAI_BASE_URL": f"http://user:{ENV_SECRETS['service_token']}@127.0.0.1:9/v1",
    "GEMINI_DEBUG": ENV_SECRETS["anthropic"],
}
BODY_SECRETS = {"hi": planted("BODYONE")["anthropic"], "again": planted("BODYTWO")["anthropic"]}


def target_file(folder: Path, name: str, *flags: str) -> Path:
    (folder / "leaky.py").write_text(AGENT)
    (folder / "planted.json").write_text(json.dumps({
        "stdout": printed(planted("OUT")), "stderr": printed(planted("ERR")), "header": planted("HDR"),
        "query": planted("QRY"), "body": BODY_SECRETS}))
    extra = "".join(f', "{flag}"' for flag in flags)
    env = ", ".join(f"{k}: {json.dumps(v)}" for k, v in TARGET_ENV.items())
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        f'launch: ["{{python}}", "{{target_dir}}/leaky.py", -p, "{{prompt}}"{extra}]\n'
        f'resume: ["{{python}}", "{{target_dir}}/leaky.py", -p, "{{prompt}}"{extra}]\n'
        "session_id: {stdout_json: session_id}\n"
        "identity: {regex: \"(?m)^You are [^\\\\n]*\"}\n"
        f'env: {{APPEND: "{{append}}", {env}}}\n'
    )
    return path


def every_output(folder: Path) -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8", errors="replace")) for p in sorted(folder.rglob("*")) if p.is_file()]


def request_journals(outputs):
    return [(p, text) for p, text in outputs if p.suffix == ".jsonl" and p.parent.name != "launches"]


@pytest.fixture(scope="module")
def leaked(tmp_path_factory):
    """`harness run` and `harness diff` for real on the leaky agent: every file they wrote, and their console."""
    tmp_path = tmp_path_factory.mktemp("leak")
    scenario = tmp_path / "leak.yaml"
    scenario.write_text("name: leak\nappend: 'Task prompt.'\nchecks: [identity_stable, appended_exactly_once]\n"
                        "steps:\n  - launch: {prompt: hi, reply: hello}\n  - resume: {prompt: again, reply: hello again}\n")
    leaky, failing = target_file(tmp_path, "leaky"), target_file(tmp_path, "leaky-failing", "--fail")
    stable = target_file(tmp_path, "leaky-stable", "--stable")
    env = {**os.environ, **USER_SECRETS}
    console = []
    for args in (["run", str(scenario), "--target", str(leaky), "--target", str(failing), "--report-dir", str(tmp_path / "run")],
                 ["diff", str(scenario), "--baseline", str(stable), "--candidate", str(leaky), "--report-dir", str(tmp_path / "diff")]):
        proc = subprocess.run([str(HARNESS), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # identity fails, the failing agent errs, the gate fails
        console += [(Path(f"console of {args[0]}: stdout"), proc.stdout), (Path(f"console of {args[0]}: stderr"), proc.stderr)]
    return tmp_path, every_output(tmp_path / "run") + every_output(tmp_path / "diff") + console


def test_planted_secrets_appear_in_no_output_of_run_or_diff(leaked):
    tmp_path, outputs = leaked
    names = {p.name for p, _ in outputs}
    assert {"results.json", "summary.md", "junit.xml", "comparison.json", "report.html"} <= names
    assert len(request_journals(outputs)) == 4  # two journals per command
    assert sum(1 for p, _ in outputs if p.parent.name == "launches") == 4  # and each one's launch journal
    for path, text in outputs:
        shown = text
        if (path, text) in request_journals(outputs):  # the body is journaled byte for byte (not guaranteed)
            shown = "\n".join(json.dumps({k: v for k, v in json.loads(line).items() if k not in ("body", "normalized")})
                              for line in text.splitlines())
        for secret in USER_SECRETS.values():
            assert secret not in shown, f"{secret!r} leaked into {path}"
        at = shown.find(MARK)
        assert at < 0, f"a planted secret leaked into {path}: …{shown[max(0, at - 80):at + 80]}…"


def test_what_was_redacted_is_still_visibly_there(leaked):
    """Nobody may mistake redaction for absence: the names and the words around each secret stay."""
    tmp_path, outputs = leaked
    for path, text in request_journals(outputs):
        for line in text.splitlines():
            exchange = json.loads(line)
            headers = exchange["headers"]
            for name in ("authorization", "x-api-key", "cookie", "openai-api-key", "x-custom-token",
                         "x-debug-github", "x-debug-slack"):
                assert headers[name] == REDACTED, (name, headers)
            assert headers["x-trace"] == f"Bearer {REDACTED}" and headers["content-type"] == "application/json"
            assert exchange["query"] == f"api_key={REDACTED}&x_custom_token={REDACTED}&debug={REDACTED}&gh={REDACTED}&beta=true"
    bodies = [json.loads(line)["body"] for _, text in request_journals(outputs) for line in text.splitlines()]
    assert any(MARK in body for body in bodies)  # the one place they stay: checks read these bytes
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    step = results["runs"][0]["steps"][0]
    for kind, shown in SHOWN.items():
        assert shown in step["stdout_tail"] and shown in step["stderr_tail"], (kind, step["stdout_tail"])
    failed = results["runs"][1]
    assert f"fatal: Bearer {REDACTED}" in failed["error"]
    identity = next(c for c in results["runs"][0]["checks"] if c["check"] == "identity_stable")
    assert identity["verdict"] == "fail" and f"You are Leaky Agent, deploy key {REDACTED}" in identity["message"]
    launches = [json.loads(line) for p, text in outputs if p.parent.name == "launches" for line in text.splitlines()]
    env = next(launch["env"] for launch in launches if launch["event"] == "start")
    assert env["ANTHROPIC_CUSTOM_HEADERS"] == f"x-custom-token: {REDACTED}"
    assert env["CLAUDE_CODE_OAUTH_TOKEN"] == env["ANTHROPIC_API_KEY"] == REDACTED
    assert env["OPENAI_BASE_URL"] == f"http://user:{REDACTED}@127.0.0.1:9/v1" and env["GEMINI_DEBUG"] == REDACTED
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")  # what steers the agent stays readable


def test_every_report_is_still_what_its_format_says(leaked):
    """Redaction works value by value: no replacement breaks the JSON, XML or HTML around it."""
    tmp_path, _ = leaked
    for folder in ("run", "diff"):
        ET.parse(tmp_path / folder / "junit.xml")
    json.loads((tmp_path / "run" / "results.json").read_text())
    comparison = json.loads((tmp_path / "diff" / "comparison.json").read_text())
    assert comparison["gate_failures"]
    page = (tmp_path / "diff" / "report.html").read_text()
    assert page.count("<pre") == page.count("</pre>") and f"deploy key {REDACTED}" in page


# --------------------------------------------------------------------------- the redactor itself


@pytest.mark.parametrize("kind", sorted(LINES))
def test_each_kind_is_found_by_its_shape_or_its_name(kind):
    secret = planted("UNIT")[kind]
    assert redact(LINES[kind].format(secret)) == SHOWN[kind]


ORDINARY = [
    "You are Claude Code, Anthropic's official CLI for Claude.",
    "Task prompt: answer with one number.",
    "identity changed at step 2: 'You are Leaky Agent.' -> 'You are Leaky Agent, v2.'",
    "session 0b2f6c1e-7d8a-4a8c-9a7e-3f0c6a1b2c3d saved",
    '{"session_id": "0b2f6c1e-7d8a-4a8c-9a7e-3f0c6a1b2c3d", "max_tokens": 4096, "input_tokens": 12}',
    "session_id=a3f9c2e1b7d84f60a1b2c3d4e5f60718 resumed",
    "x-claude-code-session-id: 6f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b",
    "checked out 3f786850e387550fdab836ed7e6dc881de23001b (sha256 "
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08)",
    "image data SGVsbG8sIHdvcmxkISBUaGlzIGlzIG9yZGluYXJ5IGJhc2U2NCB0ZXh0Lg== in the prompt",
    "first difference at byte 1043: '2026-12-01T19:43:19.123456+00:00' vs '2026-12-01T19:43:20.654321+00:00'",
    "/work/main/.venv/bin/python -m harness.reference_agent --append-system-prompt 'Task prompt.'",
    "cache_read_input_tokens: 1200, cache_creation_input_tokens: 0, author: Joe, keyboard: us",
    "journal: reports/latest/journal/leak__leaky-1a2b3c4d.jsonl",
    "ANTHROPIC_BASE_URL=http://127.0.0.1:40123 HOME=/tmp/harness-abc/home",
    "the agent looped: 101 model requests in this step",
    "sk-learn is not a key, and neither is the task-0123456789abcdef",
    "mail mailto:joe@example.com, clone git@github.com:org/repo.git at 12:30@home",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_report_content_survives(text):
    assert secret_spans(text) == [] and redact(text) == text


@pytest.mark.parametrize("text, shown", [
    ("refused: user:hunter2@proxy.example:3128", f"refused: user:{REDACTED}@proxy.example:3128"),  # a step's note
    ("HTTPS_PROXY=http://corp:hunter2@proxy:3128", f"HTTPS_PROXY=http://corp:{REDACTED}@proxy:3128"),
    ("'-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\\n"
     "-----END EC PRIVATE KEY-----'", f"'-----BEGIN EC PRIVATE KEY-----{REDACTED}-----END EC PRIVATE KEY-----'"),  # repr()
    ("…F1aY/PuoAoGCCqGSM49AwEHoUQDQgAE\n-----END OPENSSH PRIVATE KEY-----",
     f"…{REDACTED}-----END OPENSSH PRIVATE KEY-----"),  # a tail that cut the BEGIN line off
    ("token: ${GITHUB_TOKEN} and password=%PGPASS%", "token: ${GITHUB_TOKEN} and password=%PGPASS%"),  # where from, not what
])
def test_the_forms_a_secret_takes_in_notes_errors_and_tails(text, shown):
    assert redact(text) == shown


def test_the_harness_own_fake_key_is_redacted_like_any_other():
    """It is shaped like an Anthropic key, and the redactor judges shape, not provenance: no exception to widen."""
    assert redact(f"x-api-key {FAKE_API_KEY}") == f"x-api-key {REDACTED}"


@pytest.mark.parametrize("name, secret", [
    ("openai-api-key", True), ("x-custom-token", True), ("apiKey", True), ("AWS_ACCESS_KEY_ID", True),
    ("PGPASSWORD", True), ("client_secret", True), ("oauth", True), ("proxy-authorization", True),
    ("set-cookie", True), ("GOOGLE_APPLICATION_CREDENTIALS", True), ("session", True), ("x-amz-signature", True),
    ("x-session-id", False), ("session_id", False), ("max_tokens", False), ("sort_keys", False),
    ("author", False), ("keyboard", False), ("content-type", False), ("anthropic-version", False),
])
def test_credential_names(name, secret):
    assert is_secret_name(name) is secret


def test_headers_and_query_by_name_and_by_value_shape():
    headers = redact_headers([("X-Custom-Token", "anything"), ("X-Debug", "sk-ant-api03-abcdefghijklmnop0123"),
                              ("X-Session-Id", "abc-123"), ("Accept", "*/*"), ("Accept", "text/event-stream")])
    assert headers == {"x-custom-token": REDACTED, "x-debug": REDACTED, "x-session-id": "abc-123",
                       "accept": "*/*, text/event-stream"}
    assert redact_query("key=AIza0123&alt=sse&debug=xoxb-1234-5678-abcdefgh&page=2&token=") == \
        f"key={REDACTED}&alt=sse&debug={REDACTED}&page=2&token="


def test_html_text_and_attributes_are_redacted_before_they_are_escaped():
    secret = planted("HTML")["slack"]
    assert esc(f"<b>{secret}</b>") == f"&lt;b&gt;{REDACTED}&lt;/b&gt;" and attr(f'"{secret}"') == f"&quot;{REDACTED}&quot;"


def test_structured_outputs_are_redacted_value_by_value():
    secret = planted("JSON")
    document = {"env": {"MY_TOKEN": "short", "PATH": "/bin"}, "tail": "a\n" + printed(secret), "n": 3,
                "steps": [{"argv": ["--token=" + secret["service_token"]], "session_id": "1234-abcd"}]}
    shown = redact_json(document)
    assert MARK not in json.dumps(shown) and shown["n"] == 3 and shown["steps"][0]["session_id"] == "1234-abcd"
    assert shown["env"] == {"MY_TOKEN": REDACTED, "PATH": "/bin"} and shown["steps"][0]["argv"] == [f"--token={REDACTED}"]
    clean = {"a": ["b", {"c": "d"}]}
    assert redact_json(clean) is clean  # nothing to redact: the document itself, no copy
    root = ET.fromstring(f'<a m="{secret["github"]}">{secret["anthropic"]}<b/>{secret["slack"]}</a>')
    assert MARK not in ET.tostring(redact_xml(root), encoding="unicode")


def test_progress_lines_are_redacted():
    """A step's notes name what the agent tried to reach, as it named it: the console shows them as they happen."""
    scenario = scenario_from_text("name: s\nappend: x\nsteps:\n  - launch: {prompt: hi, reply: ok}\n")
    stream = io.StringIO()
    step = StepResult(index=1, kind="launch", exit_code=1, error="exited with code 1; stderr ends with: 'token=abc123'",
                      notes=["1 attempt(s) to reach another host refused: user:hunter2@proxy.example:3128"])
    ConsoleProgress(stream).step_finished(scenario, resolve_target("reference")[0], step)
    assert "hunter2" not in stream.getvalue() and "abc123" not in stream.getvalue()
    assert f"user:{REDACTED}@proxy.example:3128" in stream.getvalue()


def test_the_console_stream_redacts_whole_lines_and_restores_what_it_wrapped(monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    stream = RedactingStream(out)
    key = planted("CON")["anthropic"]
    stream.write("key " + key[:10])  # one line in two writes: found once it is whole
    assert out.getvalue() == ""
    stream.write(key[10:] + "\nnext")
    stream.flush()
    assert out.getvalue() == f"key {REDACTED}\nnext"
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with redacting_console():
        print("DATABASE_PASSWORD=" + key)
        print("token: " + key, file=sys.stderr)
    assert sys.stdout is out and sys.stderr is err
    assert out.getvalue().endswith(f"DATABASE_PASSWORD={REDACTED}\n") and err.getvalue() == f"token: {REDACTED}\n"


def test_a_file_named_like_a_credential_keeps_its_line_number_in_an_error():
    """`unknown-key.yaml:2:` is where a problem is, not a key and its value: error lines must stay readable."""
    from harness.redaction import redact

    for line in ("harness: error: unknown-key.yaml:2: unknown key 'apend'", "secrets.yaml:12: steps[1]: bad",
                 "config/api_token.json:3: expected a string"):
        assert redact(line) == line


def test_the_redactor_leaves_the_process_warnings_where_they_were():
    """detect-secrets turns on logging.captureWarnings when imported: a pytest session using the plugin would lose
    every warning after the first redaction (the flaky item's warning among them)."""
    import subprocess
    import sys

    code = ("import warnings; before = warnings.showwarning\n"
            "from harness.redaction import redact; redact('token ghp_' + 'a' * 36)\n"
            "assert warnings.showwarning is before, warnings.showwarning")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
