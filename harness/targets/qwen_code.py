"""Qwen Code from npm as a target: `qwen-code[@VERSION][+POLICY]`.

Qwen Code (a Gemini CLI fork speaking OpenAI Chat Completions) rebuilds its
system prompt in every process and takes the caller's text only from the
process's own `--append-system-prompt`, so a launcher that passes it on the
first launch only loses it on every resume: the launch policies are claude-code's.
"""

from __future__ import annotations

import json

from harness.journal.rules import RequestRule
from harness.targets.agent_cli import AgentCLI, escaped
from harness.targets.base import SessionIdSource, Target
from harness.targets.policy_family import passes_text
from harness.targets.installs import node_script

NAME = "qwen-code"
PACKAGE = "@qwen-code/qwen-code"
# The newest release on the registry on 2026-11-30, run through the library's Claude Code scenarios.
PINNED_VERSION = "0.24.4"
MODEL = "harness-model"
# `--output-format json` prints one JSON array of events, each carrying the session id the CLI minted; reading
# it back spares minting one for `--session-id` (which would need a new placeholder in the shared runner).
SESSION_ID = SessionIdSource("stdout_regex", r'"session_id":\s*"([0-9A-Fa-f-]{36})"')

# With memory.enableManagedAutoMemory on, a memory-extraction subagent runs after every turn (seen on 0.24.4).
SIDE_CALLS = (RequestRule(system=r"^You are now acting as the managed memory extraction subagent"),)
# /compress asks twice when the first answer has no <state_snapshot> (the fake API answers with <summary>):
# first on the main prompt and tools ("cache sharing"), then a dedicated summarizer; both end with this line.
COMPACTION_CALLS = (RequestRule(prompt=r"produce the <state_snapshot> XML\.\s*$"),)


def cli_command(version: str) -> tuple[str, ...]:
    """node on cli.js itself: the `qwen` bin (cli-entry.js) would relaunch it, or run a self-updated copy from HOME."""
    return node_script(NAME, PACKAGE, version, "cli.js")


def build(version: str, policy: str, command: tuple[str, ...]) -> Target:
    def launch_argv(*middle: str, first: bool) -> tuple[str, ...]:
        argv = [*command, "--auth-type", "openai", "--output-format", "json", *middle]
        if passes_text(policy, first):
            argv += ["--append-system-prompt", "{append}"]
        return tuple(argv)

    return Target(
        name=f"{NAME}@{version}+{policy}",
        commands={
            "launch": launch_argv("-p", "{prompt}", first=True),
            "resume": launch_argv("-p", "{prompt}", "--resume", "{session_id}", first=False),
            "compact": launch_argv("-p", "/compress", "--resume", "{session_id}", first=False),
        },
        session_id=SESSION_ID,
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=120.0,
        env={"OPENAI_MODEL": MODEL, "OPENAI_BASE_URL": "{base_url}/v1", "OPENAI_API_KEY": "{api_key}"},
        side_calls=SIDE_CALLS,
        compaction_calls=COMPACTION_CALLS,
        # A read-only tool, which -p runs without asking for permission.
        tool_call={"name": "glob", "input": {"pattern": "*.txt"}},
        home_files={".qwen/settings.json": escaped(json.dumps(SETTINGS, indent=2) + "\n")},
    )


# ~/.qwen/settings.json. Without it 0.24.4 sends usage statistics (RUM) to *.rum.aliyuncs.com:443 on every
# step (the netns refused them) and, with memory on by default, a memory-extraction request after every turn.
# Ripgrep off: the npm tarball's bundled rg is not executable (EACCES on stderr, then a fallback anyway).
SETTINGS = {
    "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "memory": {"enableManagedAutoMemory": False},
    "tools": {"useRipgrep": False},
    "security": {"auth": {"selectedType": "openai"}},
}


FAMILY = AgentCLI(NAME, PINNED_VERSION, summary=__doc__.split(" as a target")[0],
                  cli=lambda version: cli_command(version), build=build, releases=("npm", PACKAGE))
targets, parse_spec, name_problem = FAMILY.targets, FAMILY.parse_spec, FAMILY.name_problem
