"""opencode from npm as a target: `opencode[@VERSION][+POLICY]`.

`opencode run` rebuilds its system prompt from configuration in every process
and keeps only the messages in its session database, so what the caller adds
to the prompt must come with each process. opencode has no
--append-system-prompt; what a launcher can pass per process is config
through `OPENCODE_CONFIG_CONTENT`, whose `instructions` entry names a file
the prompt then carries ("Instructions from: PATH" and the file's text, after
the <env> block). The target writes that file once, beside the rest of the
disposable HOME, and the launch policy decides on which processes the
variable points at it: the same three policies as for Claude Code.

`opencode run` has no compaction command (`/compact` is the TUI's, and
`--command compact` is "Unexpected server error"), so a `compact` step is the
TUI's own call instead: this module, run as `python -m harness.targets.opencode`,
starts `opencode serve` and POSTs `/session/ID/summarize`, what /compact sends.
The summarizer request opens with "You are a context summarization agent"
and asks for no <summary> tags, so the fake API is told it is a compaction.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from harness.errors import InputError
from harness.journal.rules import RequestRule
from harness.targets.agent_cli import AgentCLI, escaped
from harness.targets.base import SessionIdSource, Target
from harness.targets.policy_family import passes_text
from harness.targets.installs import node_platform, npm_package_dir

NAME = "opencode"
PACKAGE = "opencode-ai"
# The newest release on 2026-11-30, run through the claude-code scenarios under every policy.
PINNED_VERSION = "1.18.33"

PROVIDER, MODEL, SMALL_MODEL = "harness", "harness-model", "harness-small"
# The caller's text: written into HOME before the launch, named per process by the policy.
CALLER_TEXT_FILE = ".harness/caller-text.md"
CONFIG_VARIABLE = "OPENCODE_CONFIG_CONTENT"
SESSION_ID = SessionIdSource("stdout_json", "sessionID")
IDENTITY_REGEX = r"(?m)^You are [^\n]*"
# The session title, asked of small_model once per session; not a turn of the conversation.
SIDE_CALLS = (RequestRule(system=r"^You are a title generator"),)
COMPACTION_CALLS = (RequestRule(system=r"^You are a context summarization agent"),)

# Model lists, self-update, LSP server downloads and sharing off; the proxy variables the
# workspace sets catch whatever is left. (`--pure` and OPENCODE_PURE do not stop the
# background `npm install @opencode-ai/plugin` in the config folder: the lock file below does.)
OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
    "OPENCODE_DISABLE_SHARE": "true",
    "NO_COLOR": "1",
}


def cli_binary(version: str) -> str:
    """The platform package's binary: opencode-ai's own bin is a stub its (skipped) install script replaces."""
    package_dir = npm_package_dir(NAME, PACKAGE, version)
    system, machine = node_platform()
    musl = system == "linux" and not platform.libc_ver()[0]
    base = f"{NAME}-{system}-{machine}"
    # Without AVX2 the default x64 build dies on an illegal instruction: take the baseline build.
    variants = [base] if machine != "x64" or _has_avx2() else []
    variants.append(f"{base}-baseline")
    names = [v + "-musl" for v in variants] if musl else []
    for name in [*names, *variants]:
        binary = package_dir.parent / name / "bin" / NAME
        if binary.is_file():
            return str(binary)
    raise InputError(f"{NAME}@{version} in {package_dir.parent.parent.parent} has no native binary for "
                     f"{platform.system()} {platform.machine()}; remove that folder to reinstall it")


def _has_avx2() -> bool:
    try:
        return bool(re.search(r"\bavx2\b", Path("/proc/cpuinfo").read_text()))
    except OSError:
        return platform.system() != "Linux"


def build(version: str, policy: str, binary: str) -> Target:
    env_tool = shutil.which("env") or "/usr/bin/env"
    text_config = json.dumps({"instructions": ["@HOME@/" + CALLER_TEXT_FILE]})
    text_config = escaped(text_config).replace("@HOME@", "{home}")

    def with_text(first: bool, *argv: str) -> tuple[str, ...]:
        if passes_text(policy, first):
            return (env_tool, f"{CONFIG_VARIABLE}={text_config}", *argv)
        return argv

    run = (binary, "run", "--format", "json")
    return Target(
        name=f"{NAME}@{version}+{policy}",
        commands={
            "launch": with_text(True, *run, "{prompt}"),
            "resume": with_text(False, *run, "--session", "{session_id}", "{prompt}"),
            "compact": with_text(False, "{python}", "-m", __name__, binary, "{session_id}"),
        },
        session_id=SESSION_ID,
        identity_regex=IDENTITY_REGEX,
        timeout_s=180.0,
        env=OFFLINE_ENV,
        home_files=_home_files(),
        side_calls=SIDE_CALLS,
        compaction_calls=COMPACTION_CALLS,
        prompt_flags=(),  # the text rides in a file the environment names, never in argv
        # A read-only tool, which `run` executes without asking for permission.
        tool_call={"name": "glob", "input": {"pattern": "*.txt"}},
    )


def _home_files() -> dict[str, str]:
    """The provider entry pointing at this run's fake API, the caller's text, and the config folder's npm state."""
    limits = {"context": 200000, "output": 8192}
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{SMALL_MODEL}",
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "harness fake API",
            "options": {"baseURL": "@BASE_URL@/v1", "apiKey": "@API_KEY@"},
            "models": {MODEL: {"name": MODEL, "limit": limits}, SMALL_MODEL: {"name": SMALL_MODEL, "limit": limits}},
        }},
    }
    text = escaped(json.dumps(config, indent=2) + "\n").replace("@BASE_URL@", "{base_url}").replace("@API_KEY@", "{api_key}")
    # Every start checks the config folder's dependencies and installs @opencode-ai/plugin from the npm
    # registry unless node_modules exists and the lock file lists it (nothing here needs the package).
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
    return {
        ".config/opencode/opencode.json": text,
        ".config/opencode/package.json": escaped(json.dumps({"private": True}) + "\n"),
        ".config/opencode/package-lock.json": escaped(json.dumps(lock) + "\n"),
        ".config/opencode/node_modules/.harness": "",
        CALLER_TEXT_FILE: "{append}",
    }


FAMILY = AgentCLI(NAME, PINNED_VERSION, summary=__doc__.split(" as a target")[0],
                  cli=lambda version: cli_binary(version), build=build, releases=("npm", PACKAGE))
targets, parse_spec, name_problem = FAMILY.targets, FAMILY.parse_spec, FAMILY.name_problem


# ---------------------------------------------------------------- `compact` step: /compact through `opencode serve`


def compact(binary: str, session_id: str) -> int:
    """Start `opencode serve` here, summarize the session as the TUI's /compact does; 0 when it answered true."""
    server = subprocess.Popen([binary, "serve", "--hostname", "127.0.0.1", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for line in server.stdout:
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                url = match.group(1)
                break
        if url is None:
            print(f"opencode serve exited ({server.wait()}) before listening", file=sys.stderr)
            return 1
        threading.Thread(target=server.stdout.read, daemon=True).start()  # keep its pipe drained
        body = json.dumps({"providerID": PROVIDER, "modelID": MODEL}).encode()
        request = urllib.request.Request(
            f"{url}/session/{session_id}/summarize?directory={urllib.parse.quote(str(Path.cwd()))}",
            data=body, headers={"content-type": "application/json"}, method="POST")
        # The workspace's proxy variables point at the fake API: the local server is reached directly.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request) as response:
                answer = response.read().decode()
        except urllib.error.HTTPError as exc:
            answer = exc.read().decode(errors="replace")
            print(json.dumps({"type": "error", "sessionID": session_id, "status": exc.code, "error": answer}), flush=True)
            return 1
        print(json.dumps({"type": "summarize", "sessionID": session_id, "result": json.loads(answer or "null")}), flush=True)
        return 0 if answer.strip() == "true" else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(compact(sys.argv[1], sys.argv[2]))
