"""The real Claude Code CLI as a target: `claude-code[@VERSION][+POLICY]`.

A launcher decides on which launches it passes the caller's text with
`--append-system-prompt`; the first seed's incident was a launcher passing it on
the first launch only. The policy is part of the target's name, so every report
says which launcher behaviour was judged, on which exact CLI version. Besides
the three policies every agent-CLI family shares, Claude Code has its own
`replace-every-launch`: the caller's text with `--system-prompt`, replacing the
CLI's prompt, on every launch (named explicitly; `+*` stays the shared three).
"""

from __future__ import annotations

import dataclasses
import platform
import shutil
from pathlib import Path

from harness.errors import InputError
from harness.execution.terminal_ui import ENTER, Dialog, TerminalUI
from harness.journal.rules import RequestRule
from harness.targets.agent_cli import AgentCLI
from harness.targets.base import Interactive, SessionIdSource, Target
from harness.targets.family import option_lines
from harness.targets.policy_family import DEFAULT_POLICY, POLICIES, passes_text
from harness.targets.installs import node_platform, npm_package_dir

NAME = "claude-code"
PACKAGE = "@anthropic-ai/claude-code"
# The version `claude-code` alone means, and the older one `make run` compares it with
# (chosen by running both: see docs/findings/claude-code.md).
PINNED_VERSION = "2.1.332"
OLDER_VERSION = "2.1.236"

# Everything the CLI would send anywhere but the fake API is switched off; the
# proxy variables the workspace sets catch whatever is left.
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    # The terminal UI installs the official plugin marketplace at start (github.com, downloads.claude.ai; measured on
    # 2.1.332 and 2.1.236 in a pty); -p runs never try it.
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}
# Claude Code's own background requests, not turns of the conversation (seen by running
# 2.0.0 to 2.1.332): session titles, a quota probe, and 2.0.x's small-model helpers.
SIDE_CALLS = (
    RequestRule(system=r"(?i)naming a coding session|generate a concise, sentence-case title|write a 5-10 word title"),
    RequestRule(prompt=r"(?i)^please write a 5-10 word title"),
    RequestRule(model=r"haiku"),
    RequestRule(prompt=r"^quota$"),
    # 2.0.x (seen on 2.0.62 and 2.0.64) warms its Explore and Plan subagents up at start: prompt "Warmup", no tools
    RequestRule(prompt=r"^Warmup$"),
)


def cli_command(version: str) -> tuple[str, ...]:
    """argv prefix running one installed version: its native binary, or cli.js under node for old releases."""
    package_dir = npm_package_dir(NAME, PACKAGE, version)
    native = _native_binary(package_dir.parent)
    if native is not None:
        return (str(native),)
    script = package_dir / "cli.js"
    if script.is_file():
        node = shutil.which("node")
        if node is None:
            raise InputError(f"{NAME}@{version} is a Node.js release (cli.js) and node is not on PATH")
        return (node, str(script))
    raise InputError(
        f"{NAME}@{version} in {package_dir.parent.parent.parent} has neither a native binary for this platform nor cli.js; "
        f"remove that folder to reinstall it"
    )


def _native_binary(scope_dir: Path) -> Path | None:
    system, machine = node_platform()
    musl = system == "linux" and not platform.libc_ver()[0]
    names = [f"claude-code-{system}-{machine}" + ("-musl" if musl else ""), f"claude-code-{system}-{machine}"]
    for name in names:
        binary = scope_dir / name / "claude"
        if binary.is_file():
            return binary
    return None


# The terminal UI, measured on 2.1.332 and 2.1.236 in a pty (docs/findings/claude-code.md). A fresh HOME's onboarding
# opens with a connectivity check against api.anthropic.com that fails offline and ends the CLI before any question,
# so the onboarding is marked done; the questions that follow are answered on screen: whether to trust the folder
# (2.1.332 points at "No, exit" first, 2.1.236 at "Yes"; 2.0.62 and 2.0.64 ask "Do you trust the files in this
# folder?" pointing at "Yes, proceed") and whether to use the API key from the environment (all point at
# "No (recommended)"; 2.0.x draws the question in a box).
TERMINAL_UI = TerminalUI(
    # the empty input line between its two rules: 2.1.x "❯", 2.0.x ">" and a no-break space, a suggestion greyed in
    ready=r"^─{10,}\n(❯\s*|>[ \xa0]+(Try \"[^\n]*\")?[ \xa0]*)$",
    dialogs=(
        Dialog("folder trust",
               screen=r"Is this a project you created or one you trust\?|Do you trust the files in this folder\?",
               choose=r"^\s*(❯\s*)?(\d\.\s*)?Yes, (I trust this folder|proceed)\b"),
        Dialog("API key", screen=r"Do you want to use this API key\?",
               choose=r"^\s*(│\s*)?(❯\s*)?(\d\.\s*)?Yes(\s+✔)?\s*│?\s*$"),
    ),
    quit=("/exit", ENTER),  # typing it opens the command menu, whose Enter runs it
)
ESC = "\x1b"
ONBOARDED = {".claude.json": {"hasCompletedOnboarding": True}}
# Every request carries the session's id; an interactive run prints none on stdout.
SESSION_HEADER = SessionIdSource("header", "X-Claude-Code-Session-Id")
# 2.0.x sends no such header (2.0.62 and 2.0.64: the id is only inside metadata.user_id; 2.1.91's cli.js has it), so
# its UI is asked for the id before it quits: /status shows "Session ID: <uuid>" (Esc closes it), read off the screen.
# The panel may take over a second to draw after a resume (Esc sent 0.3 s after Enter once closed it before the id
# showed), and the input takes a moment back once it closes (an Enter 0.3 s after "/exit" was once lost in the
# command menu): empty keystrokes, each one more 0.3 s pause between keys, and a second Enter.
PAUSE = ""
TERMINAL_UI_2_0 = dataclasses.replace(TERMINAL_UI, quit=("/status", ENTER, *(PAUSE,) * 6, ESC, PAUSE, PAUSE,
                                                         "/exit", ENTER, PAUSE, PAUSE, ENTER))
SESSION_ON_SCREEN = SessionIdSource(
    "stdout_regex", r"Session ID:?\s*([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


REPLACE = "replace-every-launch"
OWN_POLICIES = {
    REPLACE: "the caller's text with --system-prompt, replacing Claude Code's own prompt, on every launch",
}


def text_option(policy: str, first: bool) -> tuple[str, ...]:
    """The system-prompt option a launch under this policy passes, if any."""
    if policy == REPLACE:
        return ("--system-prompt", "{append}")
    return ("--append-system-prompt", "{append}") if passes_text(policy, first) else ()


def sends_session_header(version: str) -> bool:
    """Whether this release's requests carry X-Claude-Code-Session-Id: measured absent on 2.0.62 and 2.0.64, present on
    2.1.91 and later; 2.1.0-2.1.90 are taken to have it (one that does not gives its interactive step no session id,
    an error, never a verdict)."""
    return tuple(int(part) for part in version.split(".")[:2]) >= (2, 1)


def build(version: str, policy: str, command: tuple[str, ...]) -> Target:
    def launch_argv(*middle: str, first: bool) -> tuple[str, ...]:
        return (*command, *middle, "--output-format", "json", *text_option(policy, first))

    def interactive_argv(*middle: str, first: bool) -> tuple[str, ...]:
        """The same launch without -p: the prompt is typed into the UI."""
        return (*command, *middle, *text_option(policy, first))

    return Target(
        name=f"{NAME}@{version}+{policy}",
        commands={
            "launch": launch_argv("-p", "{prompt}", first=True),
            "resume": launch_argv("-p", "{prompt}", "--resume", "{session_id}", first=False),
            "compact": launch_argv("-p", "/compact", "--resume", "{session_id}", first=False),
        },
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=120.0,
        env=OFFLINE_ENV,
        side_calls=SIDE_CALLS,
        # A read-only tool, which -p runs without asking for permission.
        tool_call={"name": "Glob", "input": {"pattern": "*.txt"}},
        interactive=Interactive(
            commands={"launch": interactive_argv(first=True),
                      "resume": interactive_argv("--resume", "{session_id}", first=False)},
            ui=TERMINAL_UI if sends_session_header(version) else TERMINAL_UI_2_0,
            session_id=SESSION_HEADER if sends_session_header(version) else SESSION_ON_SCREEN, home_json=ONBOARDED,
        ),
    )


class _ClaudeCode(AgentCLI):
    """The first CLI family, whose listing spells out the launch policies the others share, and its own."""

    extra_policies = OWN_POLICIES

    def listing(self) -> list[str]:
        return [f"{NAME}[@VERSION][+POLICY]  {self.summary}, installed on first use (pinned: {self.pinned})",
                *option_lines({**POLICIES, **OWN_POLICIES}, (DEFAULT_POLICY,),
                              f"one target per policy but {REPLACE}")]


FAMILY = _ClaudeCode(NAME, PINNED_VERSION, summary="the real Claude Code CLI",
                     cli=lambda version: cli_command(version), build=build, older=OLDER_VERSION,
                     releases=("npm", PACKAGE))
targets, parse_spec, name_problem = FAMILY.targets, FAMILY.parse_spec, FAMILY.name_problem
