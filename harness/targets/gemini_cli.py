"""Google's Gemini CLI as a target: `gemini-cli[@VERSION][+POLICY]`, over the Gemini API wire format.

Gemini CLI rebuilds its system prompt in every process and has no
`--append-system-prompt`. A launcher has two places for the caller's text:

- the global context file `~/.gemini/GEMINI.md`, which every process reads at
  start and renders at the end of the system prompt (`<loaded_context>`, with a
  "Contextual Instructions (GEMINI.md)" section in the body). The policies act
  here: a launcher passing the text writes the file just before that process
  starts, one not passing it removes it (a `sh -c` prefix in argv, so the launch
  journal shows on which launches the text was given). Project files (GEMINI.md
  in the working directory, or `--include-directories`) land in the first user
  message's `<session_context>` instead, which is also rebuilt per process.
- `GEMINI_SYSTEM_MD=FILE`, a per-process variable: the file REPLACES the whole
  built-in prompt, identity line included, so passing the caller's text that
  way changes the identity by construction; not used for the policies.

`-p "/compress"` cannot express a compaction headless (0.61.0): the command
starts the summary request without awaiting it, the process sends the literal
"/compress" to the model as a turn and exits before the summary is applied; the
next resume carries the full history. The `compact` step therefore fails as
"cannot express"; compaction is driven by usage numbers instead
(scenarios/gemini-cli/auto-compression-then-resume.yaml).
"""

from __future__ import annotations

import json

from harness.journal.rules import RequestRule
from harness.targets.agent_cli import AgentCLI, escaped
from harness.targets.base import SessionIdSource, Target
from harness.targets.policy_family import passes_text
from harness.targets.installs import node_script

NAME = "gemini-cli"
PACKAGE = "@google/gemini-cli"
# The newest release on 2026-11-30 (`npm view @google/gemini-cli versions`), run end to end against the fake API.
PINNED_VERSION = "0.61.0"
# A concrete model: with the default "auto" each turn first asks a flash-lite router (a side call) and retries
# its JSON with backoff; a launcher pinning the model is also what inspect_swe's gemini_cli() does.
MODEL = "gemini-2.5-pro"
CONTEXT_FILE = ".gemini/GEMINI.md"

# Everything that would leave the machine is off: Clearcut usage statistics (only this settings key turns it
# off), telemetry, update checks, the IDE companion. Folder trust is given by --skip-trust.
SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False, "logPrompts": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "ide": {"enabled": False},
    "model": {"name": MODEL},
}
OFFLINE_ENV = {
    "GEMINI_API_KEY": "{api_key}",
    "GOOGLE_GEMINI_BASE_URL": "{base_url}",
    "GEMINI_CLI_NO_RELAUNCH": "true",  # no child node process re-launched with other heap flags
    "NO_COLOR": "1",
}
# Its own background requests (seen by running 0.61.0): the model router's complexity classifier, sent to a
# flash-lite model before every turn when the model is "auto".
SIDE_CALLS = (RequestRule(system=r"^\s*You are a specialized Task Routing AI"),)
# Its history compression: a <state_snapshot> request, then a verification request, both under this prompt.
COMPACTION_CALLS = (RequestRule(system=r"^\s*You are a specialized system component responsible for distilling chat history"),)
CANNOT_COMPACT = ("headless -p /compress never awaits its summary, sends '/compress' as a turn and exits "
                  "unapplied (0.61.0); compaction is driven by usage numbers instead (scenarios/gemini-cli)")


def cli_command(version: str) -> tuple[str, ...]:
    """node and the bundled CLI of one installed version (the package's `gemini` bin is that script)."""
    return node_script(NAME, PACKAGE, version, "bundle/gemini.js")


def context_file_argv(passes: bool) -> list[str]:
    """The launcher's per-process choice: the caller's text in ~/.gemini/GEMINI.md at this process's start, or no file."""
    path = "{home}/" + CONTEXT_FILE
    if passes:
        return ["sh", "-c", 'printf "%s\\n" "$1" > "$2" && shift 2 && exec "$@"', "sh", "{append}", path]
    return ["sh", "-c", 'rm -f "$1" && shift && exec "$@"', "sh", path]


def build(version: str, policy: str, command: tuple[str, ...]) -> Target:
    def turn(*middle: str, first: bool) -> tuple[str, ...]:
        passes = passes_text(policy, first)
        return (*context_file_argv(passes), *command, "--skip-trust", "-o", "json", *middle)

    return Target(
        name=f"{NAME}@{version}+{policy}",
        commands={
            "launch": turn("-p", "{prompt}", first=True),
            # By the session id the launch printed in its JSON (`latest` would also do: one session per run).
            "resume": turn("-p", "{prompt}", "--resume", "{session_id}", first=False),
        },
        cannot_express={"compact": CANNOT_COMPACT},
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=120.0,
        env=OFFLINE_ENV,
        home_files={".gemini/settings.json": escaped(json.dumps(SETTINGS, indent=2) + "\n")},
        side_calls=SIDE_CALLS,
        compaction_calls=COMPACTION_CALLS,
        prompt_flags=(),
        # A read-only tool, which -p runs without asking.
        tool_call={"name": "list_directory", "input": {"dir_path": "."}},
    )


FAMILY = AgentCLI(NAME, PINNED_VERSION, summary=__doc__.split(" as a target")[0],
                  cli=lambda version: cli_command(version), build=build, releases=("npm", PACKAGE))
targets, parse_spec, name_problem = FAMILY.targets, FAMILY.parse_spec, FAMILY.name_problem
