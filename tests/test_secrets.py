"""Secrets never reach a report: planted credentials, grepped for in every output of run and diff.

Two kinds are planted. The harness user's own (provider keys, a cloud secret, a
token, a proxy password in the environment) must never reach the agent, so
never any output. The agent's (a bearer token, an API key header, a cookie, a
key in a query string, all sent to the fake API and also printed on its stdout
and stderr) must be redacted wherever they are recorded: the journal,
results.json, summary.md, junit.xml, comparison.json, report.html, the console.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

USER_SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDuserKEY0123456789abcdef",
    "OPENAI_API_KEY": "sk-proj-PLANTEDopenaiKEY0123456789",
    "AWS_SECRET_ACCESS_KEY": "PLANTEDawsSECRETwJalrXUtnFEMI0123",
    "GITHUB_TOKEN": "ghp_PLANTEDgithubTOKEN0123456789abcdefgh",
    "HTTPS_PROXY": "http://corp:PLANTEDproxyPASS@proxy.example:3128",
}
AGENT_SECRETS = {
    "bearer": "PLANTEDbearerTOKEN0123456789",
    "x-api-key": "sk-ant-PLANTEDagentKEY0123456789",
    "cookie": "PLANTEDcookieSESSION0123",
    "query": "PLANTEDqueryKEY0123",
}

AGENT = '''\
import json, os, sys, urllib.request, uuid
secrets = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.json")))
args = sys.argv[1:]
prompt = args[args.index("-p") + 1]
body = {"model": "m", "max_tokens": 16, "system": [{"type": "text", "text": "You are Leaky Agent.\\n\\n" + os.environ["APPEND"]}],
        "messages": [{"role": "user", "content": prompt}]}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?api_key=" + secrets["query"], data=json.dumps(body).encode(),
    headers={"authorization": "Bearer " + secrets["bearer"], "x-api-key": secrets["x-api-key"],
             "cookie": "session=" + secrets["cookie"], "content-type": "application/json"})
urllib.request.urlopen(request, timeout=30).read()
print("debug: Authorization: Bearer " + secrets["bearer"], file=sys.stderr)
print("debug: cookie: session=" + secrets["cookie"], file=sys.stderr)
print("debug: key " + secrets["x-api-key"] + " and " + os.environ["ANTHROPIC_BASE_URL"] + "/v1?api_key=" + secrets["query"])
print(json.dumps({"session_id": str(uuid.uuid4())}))
if "--fail" in args:
    print("fatal: Bearer " + secrets["bearer"], file=sys.stderr)
    sys.exit(1)
'''


def target_file(folder: Path, name: str, fail: bool) -> Path:
    (folder / "leaky.py").write_text(AGENT)
    (folder / "planted.json").write_text(json.dumps(AGENT_SECRETS))
    extra = ', "--fail"' if fail else ""
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        f'launch: ["{{python}}", "{{target_dir}}/leaky.py", -p, "{{prompt}}"{extra}]\n'
        f'resume: ["{{python}}", "{{target_dir}}/leaky.py", -p, "{{prompt}}"{extra}]\n'
        "session_id: {stdout_json: session_id}\n"
        "identity: {regex: \"(?m)^You are [^\\\\n]*\"}\n"
        'env: {APPEND: "{append}"}\n'
    )
    return path


def every_output(folder: Path) -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8", errors="replace")) for p in sorted(folder.rglob("*")) if p.is_file()]


def test_planted_secrets_appear_in_no_output_of_run_or_diff(tmp_path):
    scenario = tmp_path / "leak.yaml"
    scenario.write_text("name: leak\nappend: 'Task prompt.'\nchecks: [identity_stable, appended_exactly_once]\n"
                        "steps:\n  - launch: {prompt: hi, reply: hello}\n  - resume: {prompt: again, reply: hello again}\n")
    good, failing = target_file(tmp_path, "leaky", False), target_file(tmp_path, "leaky-failing", True)
    env = {**os.environ, **USER_SECRETS}
    console = []
    for args in (["run", str(scenario), "--target", str(good), "--target", str(failing), "--report-dir", str(tmp_path / "run")],
                 ["diff", str(scenario), "--baseline", str(good), "--candidate", str(failing), "--report-dir", str(tmp_path / "diff")]):
        proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # the failing agent is an error in both
        console.append(proc.stdout + proc.stderr)

    outputs = every_output(tmp_path / "run") + every_output(tmp_path / "diff") + [(Path("console"), text) for text in console]
    names = {p.name for p, _ in outputs}
    assert {"results.json", "summary.md", "junit.xml", "comparison.json", "report.html"} <= names
    assert sum(1 for p, _ in outputs if p.suffix == ".jsonl" and p.parent.name != "launches") == 4  # two journals per command
    assert sum(1 for p, _ in outputs if p.parent.name == "launches") == 4  # and each one's launch journal
    for secret in [*USER_SECRETS.values(), *AGENT_SECRETS.values()]:
        for path, text in outputs:
            assert secret not in text, f"{secret!r} leaked into {path}"

    # what was redacted is still visibly there, so nobody mistakes redaction for absence
    journal = [json.loads(line) for p, text in outputs if p.suffix == ".jsonl" and p.parent.name != "launches"
               for line in text.splitlines()]
    for exchange in journal:
        assert exchange["headers"]["authorization"] == exchange["headers"]["x-api-key"] == "[redacted]"
        assert exchange["headers"]["cookie"] == "[redacted]" and exchange["query"] == "api_key=[redacted]"
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    failed_step = results["runs"][1]["steps"][0]
    assert "Bearer [redacted]" in failed_step["stderr_tail"] and "cookie: [redacted]" in failed_step["stderr_tail"]
    assert "fatal: Bearer [redacted]" in results["runs"][1]["error"]
