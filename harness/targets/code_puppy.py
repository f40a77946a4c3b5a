"""code-puppy from PyPI as a target: `code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]`.

code-puppy is a coding agent on pydantic-ai; the second and third seeds are
about it. Each step is one headless turn (`-p`) in a fresh process, resuming a
named session (`-r NAME`), which is exactly the front door that minted a new
agent id per process and grew the prompt with plugin fragments. The variants a
user needs to tell those apart are part of the target's name: which wire format
its model entry speaks (OpenAI-compatible or Anthropic-compatible) and whether
its memory plugin (the kennel, `PUPPY_KENNEL_ENABLED`) runs.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

from harness.errors import InputError
from harness.execution.terminal_ui import ENTER, TerminalUI
from harness.journal.rules import RequestRule
from harness.targets.agent_cli import escaped
from harness.targets.base import Interactive, SessionIdSource, Target
from harness.targets.family import SpecFamily, option_lines
from harness.targets.installs import VERSION_RE, install_record, pip_latest_version, pip_venv_dir

NAME = "code-puppy"
PACKAGE = "code-puppy"
# What `make run` measures (docs/findings/code-puppy.md's table): the newest release on 2026-11-30,
# and the release the seeds' fixes were proposed against.
PINNED_VERSION = "0.0.946"
OLDER_VERSION = "0.0.827"
LATEST = "latest"

FORMATS = {
    "openai": "its model entry is custom_openai: OpenAI Chat Completions",
    "anthropic": "its model entry is custom_anthropic: Anthropic Messages",
}
MEMORY = {
    "no-memory": "the memory plugin off, as code-puppy ships",
    "memory": "the memory plugin on (PUPPY_KENNEL_ENABLED=1)",
}
DEFAULT_FORMAT, DEFAULT_MEMORY = "openai", "no-memory"
EVERY_VARIANT = "*"

# code-puppy renders its per-process agent id into this line of the system prompt.
IDENTITY_REGEX = r"Your ID is `[^`]*`"
SESSION_NAME = "harness-session"
# `-r NAME` prints "Created new session: NAME" when it starts the session and "Resumed: N messages (T tokens)
# from NAME" on every later step (0.0.827 and 0.0.946): each step's output names the session it continued.
SESSION_ID = SessionIdSource("stdout_regex", r"(?m)^(?:Created new session: |Resumed: [^\n]* from )(\S+)")
_MODEL_KEY = "harness-model"
# Its background requests, not turns of the conversation (seen by running 0.0.946).
SIDE_CALLS = (
    RequestRule(system=r"You name coding-agent chat sessions"),
    # After each turn in its terminal UI (0.0.946 in a pty): whether the reply only waits for permission to go on.
    RequestRule(system=r"^Decide whether the assistant is merely waiting for permission"),
)
# /compact's summarization request; its reply becomes the summary code-puppy keeps.
COMPACTION_CALLS = (RequestRule(system=r"^You are a context summarization assistant"),)


def targets(spec: str) -> list[Target]:
    """`code-puppy`, `code-puppy@0.0.946`, `code-puppy@latest+anthropic+memory`, `code-puppy+*`, ..."""
    version, variants = parse_spec(spec)
    if version == LATEST:
        version = pip_latest_version(PACKAGE)
    executable = pip_venv_dir(NAME, PACKAGE, version) / "bin" / "code-puppy"
    if not executable.is_file():
        raise InputError(f"{NAME}@{version}: the install has no {executable}; remove {executable.parent.parent.parent} to reinstall it")
    record = install_record(NAME, version)
    return [replace(build(version, wire, memory, str(executable)), installed=record) for wire, memory in variants]


def name_problem(name: str) -> str | None:
    """Why no code-puppy target can carry this name (reports always name version, format and memory), or None."""
    if "@" not in name or name.count("+") != 2 or "@latest" in name:
        return (f"target {name!r}: a code-puppy target is always named code-puppy@X.Y.Z+FORMAT+MEMORY "
                f"(e.g. code-puppy@{PINNED_VERSION}+{DEFAULT_FORMAT}+{DEFAULT_MEMORY})")
    try:
        parse_spec(name)
    except InputError as exc:
        return str(exc)
    return None


def parse_spec(spec: str) -> tuple[str, list[tuple[str, str]]]:
    """The version (or "latest") and the (format, memory) variants a spec names; nothing is installed."""
    head, *options = spec[len(NAME):].split("+")
    version = PINNED_VERSION
    if head:
        if not head.startswith("@") or not (head[1:] == LATEST or VERSION_RE.fullmatch(head[1:])):
            raise InputError(f"bad target {spec!r}: expected code-puppy[@X.Y.Z|@latest][+FORMAT][+MEMORY] "
                             f"(e.g. code-puppy@{PINNED_VERSION}+anthropic+memory)")
        version = head[1:]
    formats, memories = [DEFAULT_FORMAT], [DEFAULT_MEMORY]
    seen: set[str] = set()
    for option in options:
        if option == EVERY_VARIANT:
            formats, memories = list(FORMATS), list(MEMORY)
        elif option in FORMATS and "format" not in seen:
            formats = [option]
            seen.add("format")
        elif option in MEMORY and "memory" not in seen:
            memories = [option]
            seen.add("memory")
        else:
            raise InputError(
                f"bad option {option!r} in target {spec!r}: expected one format ({', '.join(FORMATS)}), one of "
                f"{', '.join(MEMORY)}, or * for every combination"
            )
    return version, list(itertools.product(formats, memories))


# Its prompt_toolkit REPL, measured on 0.0.946 in a pty: no question once puppy.cfg names the puppy, the owner and
# the model (the home files every target writes); `>>> ` waits for the prompt, `/exit` and Enter quit.
TERMINAL_UI = TerminalUI(ready=r"^>>>\s*$", quit=("/exit", ENTER))


def build(version: str, wire: str, memory: str, executable: str) -> Target:
    def turn(prompt: str, session: str) -> tuple[str, ...]:
        return (executable, "-p", prompt, "-r", session)

    return Target(
        name=f"{NAME}@{version}+{wire}+{memory}",
        commands={
            "launch": turn("{prompt}", SESSION_NAME),
            "resume": turn("{prompt}", "{session_id}"),
            "compact": turn("/compact", "{session_id}"),
        },
        session_id=SESSION_ID,
        identity_regex=IDENTITY_REGEX,
        timeout_s=120.0,
        env={
            "NO_VERSION_UPDATE": "1",
            "PUPPY_KENNEL_ENABLED": "1" if memory == "memory" else "0",
            "TERM": "dumb",
            "NO_COLOR": "1",
        },
        home_files=_config_files(wire),
        side_calls=SIDE_CALLS,
        compaction_calls=COMPACTION_CALLS,
        adds_own_temporary_text=True,  # its autonomy instruction on every -p run (scenarios/code-puppy/temporary-headless-text.yaml)
        interactive=Interactive(
            commands={"launch": (executable, "-r", SESSION_NAME), "resume": (executable, "-r", "{session_id}")},
            ui=TERMINAL_UI, session_id=SESSION_ID,
        ),
    )


def _config_files(wire: str) -> dict[str, str]:
    """Where each release looks: recent ones under the XDG folders the workspace sets, older ones in ~/.code_puppy."""
    config, models = escaped(_PUPPY_CFG), _models_json(wire)
    return {
        ".config/code_puppy/puppy.cfg": config,
        ".local/share/code_puppy/extra_models.json": models,
        ".code_puppy/puppy.cfg": config,
        ".code_puppy/extra_models.json": models,
    }


# Without puppy_name, owner_name and model, code-puppy stops at an input prompt.
# /compact summarizes all but the newest protected_token_count tokens (1000 is its
# floor), so a scenario's compaction compacts something without 50k tokens of turns.
_PUPPY_CFG = f"""[puppy]
puppy_name = Biscuit
owner_name = Harness
model = {_MODEL_KEY}
protected_token_count = 1000
compaction_strategy = summarization
"""


def _models_json(wire: str) -> str:
    """The one model entry, pointing at this run's fake API; {base_url} and {api_key} are filled in at launch."""
    if wire == "anthropic":
        entry = {"type": "custom_anthropic", "name": "claude-sonnet-harness",
                 "custom_endpoint": {"url": "@BASE_URL@", "api_key": "@API_KEY@"}}
    else:
        entry = {"type": "custom_openai", "name": "harness-model",
                 "custom_endpoint": {"url": "@BASE_URL@/v1", "api_key": "@API_KEY@"}}
    entry["context_length"] = 200000
    text = escaped(json.dumps({_MODEL_KEY: entry}, indent=2) + "\n")
    return text.replace("@BASE_URL@", "{base_url}").replace("@API_KEY@", "{api_key}")



FAMILY = SpecFamily(
    NAME, "'code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]'", targets, name_problem,
    lines=(f"{NAME}[@VERSION|@latest][+FORMAT][+MEMORY]  code-puppy from PyPI in its own virtualenv (pinned: {PINNED_VERSION})",
           *option_lines({**FORMATS, **MEMORY}, (DEFAULT_FORMAT, DEFAULT_MEMORY), "one target per format and memory setting")),
    defaults=(f"{NAME}@{PINNED_VERSION}", f"{NAME}@{OLDER_VERSION}"),
    releases=("pypi", PACKAGE),
)
