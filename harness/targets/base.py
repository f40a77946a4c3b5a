"""A target: how one step of a scenario becomes one fresh process of an agent.

Targets know argv templates, environment, how to read the session id back and
where the identity line lives. They know nothing about checks.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.errors import InputError
from harness.execution.base import StepExecutor
from harness.execution.subprocess import SubprocessSteps
from harness.execution.terminal_ui import TerminalUI
from harness.journal.rules import RequestRule
from harness.journal.exchange import Exchange
from harness.scenario.model import SESSION_MODES

PLACEHOLDERS = ("prompt", "append", "temporary", "session_id", "base_url", "api_key", "home", "workdir", "target_dir", "python", "checkout")
SESSION_ID_SOURCES = ("stdout_json", "stdout_regex", "header")
DEFAULT_IDENTITY = r"(?m)^You are [^\n]*"


@dataclass(frozen=True)
class SessionIdSource:
    kind: str  # one of SESSION_ID_SOURCES
    value: str

    def read(self, stdout: str, exchanges: Iterable[Exchange]) -> str | None:
        if self.kind == "stdout_json":
            return _from_json_lines(stdout, self.value)
        if self.kind == "stdout_regex":
            match = re.search(self.value, stdout)
            if not match:
                return None
            if "session_id" in match.groupdict():
                return match.group("session_id")
            return match.group(1) if match.groups() else match.group(0)
        name = self.value.lower()
        for exchange in exchanges:
            if name in exchange.headers:
                return exchange.headers[name]
        return None

    def describe(self) -> str:
        return f"{self.kind}: {self.value}"


def _from_json_lines(stdout: str, key: str) -> str | None:
    """The last JSON object on stdout carrying the key (agents print logs before their result)."""
    candidates = [stdout] + list(reversed(stdout.splitlines()))
    for text in candidates:
        text = text.strip()
        if not text.startswith("{"):
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            continue
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and value:
            return value
    return None


def command_in(commands: Mapping[str, tuple[str, ...]], kind: str, session: str | None) -> tuple[str, ...] | None:
    """A step kind's command (`KIND+MODE` for a step reaching its session another way); `retry` falls back to resume."""
    key = kind if session is None else f"{kind}+{session}"
    if key in commands:
        return commands[key]
    if kind == "retry":
        return commands.get("resume" if session is None else f"resume+{session}")
    return None


@dataclass(frozen=True)
class Interactive:
    """How a family runs a step in its terminal UI (`interactive: true`): measured per family, never guessed.

    `commands` are argv templates as Target.commands, without the headless flag; `ui` says what a fresh HOME
    asks and how the harness answers, types and quits (harness/execution/terminal_ui.py); `home_json` sets
    top-level keys of HOME-relative JSON files before each interactive step, for what a UI cannot be answered
    offline (Claude Code checks its connection to Anthropic before it asks about an API key).
    """

    commands: Mapping[str, tuple[str, ...]]
    ui: TerminalUI
    session_id: SessionIdSource
    home_json: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def command_for(self, kind: str, session: str | None = None) -> tuple[str, ...] | None:
        return command_in(self.commands, kind, session)


@dataclass(frozen=True)
class Target:
    name: str
    commands: Mapping[str, tuple[str, ...]]
    session_id: SessionIdSource
    identity_regex: str = DEFAULT_IDENTITY
    timeout_s: float = 60.0
    env: Mapping[str, str] = field(default_factory=dict)
    target_dir: Path = Path(".")
    side_calls: tuple[RequestRule, ...] = ()
    compaction_calls: tuple[RequestRule, ...] = ()  # its summarization requests, where the fake API cannot tell them
    source: Path | None = None  # the target file, when there is one
    checkout: Path | None = None  # the agent's code at a named git revision (target files with `repo:`)
    revision: str | None = None  # the commit that checkout holds
    # How the steps are carried out, chosen once by the family (harness/execution/): a fresh subprocess each,
    # a call in the harness process (InProcessSteps), or launches of one launcher process (LauncherSteps, which
    # leaves `commands` unused). Picklable, as the whole Target is.
    executor: StepExecutor = SubprocessSteps()
    home_files: Mapping[str, str] = field(default_factory=dict)  # HOME-relative path -> template, written before the launch
    # Options of the agent binary whose value is system-prompt text (what launch checks read in argv).
    prompt_flags: tuple[str, ...] = ("--append-system-prompt", "--system-prompt")
    # A call of one of the agent's own tools ({"name": ..., "input": {...}}), for `harness explore`'s tool-call turns.
    tool_call: Mapping[str, Any] | None = None
    # Set: the scenarios' expectations for that target name apply to this one (the same agent, run another way).
    expected_as: str | None = None
    # Step kinds this agent has no way to carry out, and why: a scenario with one is reported as
    # "cannot express", not run (a headless CLI without a compaction command, say).
    cannot_express: Mapping[str, str] = field(default_factory=dict)
    # Step kinds whose output carries no session id by the agent's own design (the previous id carries over);
    # every other step must print one as `session_id` says, the launch included.
    steps_without_session_id: frozenset[str] = frozenset()
    # The --target text that resolves to this target again, where its name is not one (a target file's name is
    # `my-agent@buggy`, its spec `agent.yaml@buggy`): what replay hints print.
    spec: str | None = None
    # Whether the agent adds a text of its own to every run (a headless instruction, code-puppy's words) that a
    # scenario's top-level `temporary:` can name: only then can that scenario be judged on it.
    adds_own_temporary_text: bool = False
    # What it runs as installed (a Python launcher's release and the dependencies resolved with it, and the time they
    # were resolved as of): a verdict on an old release depends on them as much as on the release. Shown in reports.
    installed: tuple[str, ...] = ()
    # Set: the agent's terminal UI can run a step (`interactive: true`) in a pty; None: such a scenario is "cannot express".
    interactive: Interactive | None = None

    @property
    def replay_spec(self) -> str:
        """What to pass as --target to run this target again: a family's names are their own specs."""
        return self.spec if self.spec is not None else self.name

    def cannot_express_reason(self, steps: Iterable[Any]) -> str | None:
        """Why this target cannot carry out one of these steps (the first such), or None.

        A step's temporary text reaches a command target only as {temporary}: where the
        step's command (its environment, its HOME files) never says it, the agent is never
        told the text, and the check would judge a text nobody gave it.
        """
        for step in steps:
            if getattr(step, "interactive", False):
                problem = self._cannot_run_interactively(step)
                if problem is not None:
                    return f"step {step.index} ({step.kind}): {problem}"
            if step.kind in self.cannot_express:
                return f"step {step.index} ({step.kind}): {self.cannot_express[step.kind]}"
            session = getattr(step, "session", None)
            if session is not None and self.command_for(step.kind, session) is None:
                return (f"step {step.index} ({step.kind}): it reaches the session by `session: {session}`, and this "
                        f"target cannot {SESSION_MODES[session]}")
            commanded = self.command_for(step.kind) is not None  # a launcher target's steps have no command to read
            if getattr(step, "temporary", None) and commanded and not self.hands_over("temporary", step.kind):
                used = step.kind if step.kind in self.commands else f"resume (which its {step.kind} steps use)"
                why = (f"step {step.index} ({step.kind}): its temporary text reaches the agent only through the "
                       "{temporary} placeholder")
                if self.source is None:  # a built-in family: the command is the harness's, the agent takes no such text
                    return f"{why}, and this target's {used} command passes none"
                return (f"{why}, which {self.source} uses in neither its {used} command nor its env (add it where the "
                        "agent takes text for one turn)")
        return None

    def _cannot_run_interactively(self, step: Any) -> str | None:
        if self.interactive is None:
            return ("it runs interactively (`interactive: true`), and this target declares no terminal UI the "
                    "harness can drive")
        if self.interactive.command_for(step.kind, step.session) is None:
            how = f" reaching its session by `session: {step.session}`" if step.session else ""
            return f"it runs interactively, and this target's terminal UI has no {step.kind} command{how}"
        return None

    def cannot_express_own_text(self, texts: Iterable[str]) -> str | None:
        """Why a scenario's top-level `temporary:` (text the agent adds by itself) cannot be judged here, or None.

        Nothing hands that text to the agent: it is the agent's own, so the scenario applies only to an agent
        known to add it. On any other the text is absent from every request, which is not applicable rather
        than an error.
        """
        if not any(texts) or self.adds_own_temporary_text:
            return None
        return ("the scenario's `temporary:` is text an agent adds to every run by itself (a headless instruction), "
                f"and {self.source or self.name} adds none the harness knows of")

    def hands_over(self, placeholder: str, kind: str) -> bool:
        """Whether a step of this kind hands the agent {placeholder}: in its command, its environment or a HOME file."""
        templates = [*(self.command_for(kind) or ()), *self.env.values(), *self.home_files.values()]
        return any(placeholder in template_fields(template) for template in templates)

    def prints_session_id(self, kind: str) -> bool:
        """The launch always must; a later step unless the target declares its kind prints none."""
        return kind == "launch" or kind not in self.steps_without_session_id

    def session_id_exemptions(self) -> str:
        """For error messages: which step kinds the target exempts, or how it could."""
        if self.steps_without_session_id:
            return f" (exempt: {', '.join(sorted(self.steps_without_session_id))})"
        return " (a target that prints none on such a step says so with `steps_without_session_id`)"

    def command_for(self, kind: str, session: str | None = None) -> tuple[str, ...] | None:
        """`retry` is a resume unless the target says otherwise.

        A step that reaches its session another way than by id (`session: continue|fork`) has a command of its
        own, keyed `KIND+MODE` (`resume+fork`); a target without one cannot express that step.
        """
        return command_in(self.commands, kind, session)

    @property
    def identity_pattern(self) -> re.Pattern[str]:
        return re.compile(self.identity_regex)


def template_fields(template: str) -> list[str]:
    """Placeholder names used in one argv/env template; raises ValueError on bad braces."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def validate_template(template: str, where: str, path: Path | None = None, line: int | None = None) -> None:
    try:
        names = template_fields(template)
    except ValueError as exc:
        raise InputError(f"{where}: bad braces in {template!r} ({exc}); write {{{{ and }}}} for literal braces", path, line)
    for name in names:
        if name not in PLACEHOLDERS:
            shown = name if name.isprintable() else repr(name)  # a line break in it would break the one line
            raise InputError(
                f"{where}: unknown placeholder {{{shown}}} in {template!r} (known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})",
                path,
                line,
            )


def render(template: str, values: Mapping[str, str | None]) -> str:
    """Fill placeholders; a placeholder whose value does not exist yet is an error, not an empty string."""
    missing = [n for n in template_fields(template) if values.get(n) is None]
    if missing:
        raise MissingValue(missing[0], template)
    return template.format_map({k: ("" if v is None else v) for k, v in values.items()})


class MissingValue(Exception):
    def __init__(self, name: str, template: str):
        super().__init__(f"placeholder {{{name}}} has no value yet in {template!r}")
        self.name = name
