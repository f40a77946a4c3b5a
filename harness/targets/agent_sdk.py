"""What the two Claude Agent SDK families share: `NAME[@VERSION][+claude-code@X.Y.Z][+POLICY|+*]`, one query per step.

An SDK is a launcher that lives in its caller's process: each step is a fresh
process (Python or node) making one `query()`, and the SDK decides the Claude
Code CLI's argv from the options the caller wrote. So a target names the SDK
release, the CLI build it starts (the one its package bundles unless
`+claude-code@X.Y.Z` points `cli_path` at another from the tools folder) and
how the caller passes its text: the launch policies of the agent CLIs, where
"never" means what a caller who sets no `system_prompt` gets, and
`replace-every-launch`, the caller's text as the whole system prompt. Both
SDKs' step scripts take the same arguments, so one `build` serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from harness.errors import InputError
from harness.execution.recorded_launches import RecordedLaunchSteps
from harness.targets import claude_code
from harness.targets.agent_cli import escaped
from harness.targets.base import SessionIdSource, Target
from harness.targets.family import option_lines
from harness.targets.installs import VERSION_RE
from harness.targets.policy_family import EVERY_LAUNCH, EVERY_POLICY, FIRST_LAUNCH_ONLY, NEVER, passes_text

REPLACE = "replace-every-launch"
POLICIES = {
    EVERY_LAUNCH: "the caller's text as the claude_code preset's `append` on every query, resumes and /compact included",
    FIRST_LAUNCH_ONLY: "that option on the first query only (a caller relying on the session to keep it)",
    NEVER: "no `system_prompt` option at all",
    REPLACE: "the caller's text as a string `system_prompt` (replacing Claude Code's own) on every query",
}
DEFAULT_POLICY = EVERY_LAUNCH
CLI_PART = "claude-code@"
COMPACT_PROMPT = "/compact"


@dataclass(frozen=True)
class Installed:
    """One installed SDK release: how to run a step script with it, and the CLI build its package bundles."""

    step_command: tuple[str, ...]  # argv prefix of the step script (its interpreter and the script)
    bundled_cli: Path
    bundled_version: str
    record: tuple[str, ...] = ()  # the release and its dependencies as resolved (installs.install_record)


@dataclass(frozen=True)
class AgentSDKFamily:
    name: str  # the spec prefix, e.g. "claude-agent-sdk"
    pinned: str  # the release a bare name means
    summary: str  # what `harness targets` says it is
    install: Callable[[str], Installed]  # release -> its install, made on first use
    # Where the SDK puts the system prompt for the CLI: argv options, or (the TypeScript SDK) fields of the
    # `initialize` control request it writes on the CLI's stdin, which the recording shim then relays and records.
    prompt_options: tuple[str, ...]
    over_stdin: bool = False
    releases: tuple[str, str] | None = None  # (registry, package) its versions are releases of: `harness bisect` walks them

    @property
    def grammar(self) -> str:
        return f"'{self.name}[@VERSION][+claude-code@X.Y.Z][+POLICY]'"

    def matches(self, spec: str) -> bool:
        return spec == self.name or spec.startswith((f"{self.name}@", f"{self.name}+"))

    def parse_spec(self, spec: str) -> tuple[str, str | None, list[str]]:
        """The release, the CLI build named (None: the bundled one) and the policies; nothing installed."""
        usage = (f"expected {self.name}[@VERSION][+claude-code@X.Y.Z][+POLICY|+*] "
                 f"(e.g. {self.name}@{self.pinned}+{EVERY_LAUNCH})")
        head, _, rest = spec.partition("+")
        version = self.pinned
        if head != self.name:
            if not head.startswith(self.name + "@") or not VERSION_RE.fullmatch(head[len(self.name) + 1:]):
                raise InputError(f"bad target {spec!r}: {usage}")
            version = head[len(self.name) + 1:]
        cli, policies = None, [DEFAULT_POLICY]
        for part in [p for p in rest.split("+") if p] if rest else []:
            if part.startswith(CLI_PART) and VERSION_RE.fullmatch(part[len(CLI_PART):]):
                cli = part[len(CLI_PART):]
            elif part in POLICIES:
                policies = [part]
            elif part == EVERY_POLICY:
                policies = list(POLICIES)
            else:
                raise InputError(f"bad target {spec!r}: unknown part {part!r} (policies: {', '.join(POLICIES)}, "
                                 f"or * for all); {usage}")
        return version, cli, policies

    def targets(self, spec: str) -> list[Target]:
        version, cli_version, policies = self.parse_spec(spec)
        installed = self.install(version)
        if cli_version is None or cli_version == installed.bundled_version:
            cli_version, cli = installed.bundled_version, (str(installed.bundled_cli),)
        else:
            cli = claude_code.cli_command(cli_version)
        return [replace(build(self, version, cli_version, policy, installed.step_command, cli), installed=installed.record)
                for policy in policies]

    def name_problem(self, name: str) -> str | None:
        """Reports name the release, the CLI build and the policy: an expectation must too."""
        try:
            self.parse_spec(name)
        except InputError as exc:
            return str(exc)
        parts = name.split("+")
        if "@" not in parts[0] or not any(p.startswith(CLI_PART) for p in parts[1:]) \
                or not any(p in POLICIES for p in parts[1:]):
            return (f"target {name!r}: a {self.name} target is always named "
                    f"{self.name}@VERSION+claude-code@X.Y.Z+POLICY (e.g. {self.name}@{self.pinned}+claude-code@"
                    f"{claude_code.PINNED_VERSION}+{EVERY_LAUNCH})")
        return None

    def listing(self) -> list[str]:
        return [f"{self.name}[@VERSION][+claude-code@X.Y.Z][+POLICY]  {self.summary}, installed on first use "
                f"(pinned: {self.pinned}; runs the CLI its package bundles unless +claude-code@ names another)",
                *option_lines(POLICIES, (DEFAULT_POLICY,), "one target per policy")]

    def install_defaults(self) -> list[str]:
        return [f"{self.name}@{self.pinned}"]


def _system(policy: str, first: bool) -> tuple[str, ...]:
    """The step script's system-prompt arguments for one query under a policy."""
    if policy == REPLACE:
        return ("--system=string", "--text={append}")
    if passes_text(policy, first):
        return ("--system=preset-append", "--text={append}")
    return ("--system=none",)


def build(family: AgentSDKFamily, version: str, cli_version: str, policy: str, step: tuple[str, ...],
          cli: tuple[str, ...]) -> Target:
    def query(prompt: str, *session: str, first: bool = False) -> tuple[str, ...]:
        return (*(escaped(part) for part in step), f"--prompt={prompt}", *_system(policy, first), *session)

    commands = {"launch": query("{prompt}", first=True)}
    for kind, prompt in (("resume", "{prompt}"), ("compact", escaped(COMPACT_PROMPT))):
        commands[kind] = query(prompt, "--resume={session_id}")
        commands[f"{kind}+continue"] = query(prompt, "--continue")
        commands[f"{kind}+fork"] = query(prompt, "--resume={session_id}", "--fork")
    return Target(
        name=f"{family.name}@{version}+{CLI_PART}{cli_version}+{policy}",
        commands=commands,
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=120.0,
        env=claude_code.OFFLINE_ENV,
        side_calls=claude_code.SIDE_CALLS,
        tool_call={"name": "Glob", "input": {"pattern": "*.txt"}},
        executor=RecordedLaunchSteps(binary="claude", real=cli, relay_stdin=family.over_stdin),
        prompt_flags=family.prompt_options,
    )
