"""OpenAI's Codex CLI from npm as a target: `codex[@VERSION][+POLICY]`.

`codex exec` rebuilds its configuration per process, so the caller's text is a
per-process option (`-c developer_instructions=...`) and the launcher decides
on which launches it passes it: the same three policies as for Claude Code.
A resume replays the developer message the session recorded at launch, but a
compaction rebuilds the initial context from the compacting process's own
configuration; that is where a launcher that passes the text once loses it.

`codex exec` has no compaction command (`/compact` is sent to the model as
plain text), so a `compact` step is the IDE's front door instead: this module,
run as `python -m harness.targets.codex`, starts `codex app-server` on stdio,
resumes the thread and asks for `thread/compact/start`, the request the TUI's
/compact makes. Codex's summarization request is a plain Responses request whose
last user message opens with "You are performing a CONTEXT CHECKPOINT
COMPACTION"; the fake API cannot tell it by itself, so the target says so.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

from harness.errors import InputError
from harness.journal.rules import RequestRule
from harness.targets.agent_cli import AgentCLI, escaped
from harness.targets.base import SessionIdSource, Target
from harness.targets.policy_family import passes_text
from harness.targets.installs import node_platform, npm_package_dir

NAME = "codex"
PACKAGE = "@openai/codex"
# The newest release on 2026-11-30, run through the claude-code scenarios under every policy.
PINNED_VERSION = "0.171.0"
# A model the CLI has metadata for: an unknown one adds a warning item and fallback limits.
MODEL = "gpt-5.5"

# The caller's text as a per-process config override. A TOML multi-line literal string
# keeps every byte (no escapes); only a text containing ''' cannot be passed this way.
APPEND_OPTION = ("-c", "developer_instructions='''{append}'''")
COMPACTION_CALLS = (RequestRule(prompt=r"^You are performing a CONTEXT CHECKPOINT COMPACTION"),)
IDENTITY_REGEX = r"(?m)^You are [^\n]*"
SESSION_ID = SessionIdSource("stdout_json", "thread_id")

# Update checks, analytics, feedback and OpenTelemetry off; plugins off, because they
# sync a curated repository with git (github.com, api.github.com) and ask chatgpt.com
# for apps on every start (seen as refused CONNECTs in the journal with them on).
_CONFIG = """model = "{model}"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "harness fake API"
base_url = "{{base_url}}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
"""


def cli_binary(version: str) -> str:
    """The native binary of the platform package npm installed beside @openai/codex (its codex.js only execs it)."""
    package_dir = npm_package_dir(NAME, PACKAGE, version)
    system, machine = node_platform()
    triple = {("linux", "x64"): "x86_64-unknown-linux-musl", ("linux", "arm64"): "aarch64-unknown-linux-musl",
              ("darwin", "x64"): "x86_64-apple-darwin", ("darwin", "arm64"): "aarch64-apple-darwin"}.get((system, machine))
    if triple is None:
        raise InputError(f"{NAME}@{version}: no native build for {platform.system()} {platform.machine()}")
    for vendor in (package_dir.parent / f"codex-{system}-{machine}" / "vendor", package_dir / "vendor"):
        binary = vendor / triple / "bin" / "codex"
        if binary.is_file():
            return str(binary)
    raise InputError(f"{NAME}@{version} in {package_dir.parent.parent.parent} has no native binary for {triple}; "
                     f"remove that folder to reinstall it")


def build(version: str, policy: str, binary: str) -> Target:
    def append(first: bool) -> tuple[str, ...]:
        return APPEND_OPTION if passes_text(policy, first) else ()

    exec_ = (binary, "exec", "--skip-git-repo-check", "--json")
    return Target(
        name=f"{NAME}@{version}+{policy}",
        commands={
            "launch": (*exec_, *append(True), "{prompt}"),
            "resume": (*exec_, *append(False), "resume", "{session_id}", "{prompt}"),
            "compact": ("{python}", "-m", __name__, binary, "{session_id}", *append(False)),
        },
        session_id=SESSION_ID,
        identity_regex=IDENTITY_REGEX,
        timeout_s=120.0,
        env={"CODEX_HOME": "{home}/.codex", "NO_COLOR": "1"},
        home_files={".codex/config.toml": _CONFIG.format(model=MODEL)},
        compaction_calls=COMPACTION_CALLS,
        prompt_flags=("-c developer_instructions",),
        # A read-only shell command, which the default read-only sandbox runs without asking.
        tool_call={"name": "exec_command", "input": {"cmd": "ls"}},
    )


FAMILY = AgentCLI(NAME, PINNED_VERSION, summary=__doc__.split(" as a target")[0],
                  cli=lambda version: cli_binary(version), build=build, releases=("npm", PACKAGE))
targets, parse_spec, name_problem = FAMILY.targets, FAMILY.parse_spec, FAMILY.name_problem


# ---------------------------------------------------------------- `compact` step: /compact through app-server


def compact(binary: str, thread_id: str, options: list[str]) -> int:
    """Resume the thread in `codex app-server` and compact it; 0 when the compaction turn completed."""
    server = subprocess.Popen([binary, "app-server", *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(message: dict) -> None:
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "harness", "version": "1"}}})
    send({"method": "initialized"})
    send({"id": 2, "method": "thread/resume", "params": {"threadId": thread_id}})
    status = None
    for line in server.stdout:
        message = json.loads(line)
        if "error" in message:
            print(json.dumps({"type": "error", "request": message.get("id"), "error": message["error"]}), flush=True)
            break
        if message.get("id") == 2:
            send({"id": 3, "method": "thread/compact/start", "params": {"threadId": thread_id}})
        elif message.get("method") in ("item/completed", "turn/completed", "error"):
            print(json.dumps(message), flush=True)
            if message["method"] == "turn/completed":
                status = message["params"]["turn"]["status"]
                # As `codex exec --json` ends its output: the thread the server says it compacted, so the step
                # keeps the target's output contract like every other step.
                if message["params"].get("threadId"):
                    print(json.dumps({"type": "thread.compacted", "thread_id": message["params"]["threadId"]}), flush=True)
                break
    server.stdin.close()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    if status != "completed":
        print(f"codex app-server: the compaction of {thread_id} did not complete (turn status {status})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(compact(sys.argv[1], sys.argv[2], sys.argv[3:]))
