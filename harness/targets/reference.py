"""The reference agent as a target: `reference` is clean, `reference:DEFECT[,DEFECT]` switches defects on.

`+in-process` runs each step inside the harness process instead of as
`python -m harness.reference_agent` (harness/reference_agent/in_process.py):
the same flags, no subprocess, no socket. Such a target is named with the
suffix and held to the scenarios' expectations for its subprocess twin.
"""

from __future__ import annotations

from pathlib import Path

import harness
from harness import install_hint
from harness.errors import InputError
from harness.execution.in_process import InProcessSteps
from harness.execution.subprocess import SubprocessSteps
from harness.reference_agent.defects import DEFECT_DESCRIPTIONS, KNOWN_DEFECTS
from harness.targets.base import SessionIdSource, Target
from harness.targets.family import SpecFamily

NAME = "reference"
EVERY_DEFECT = "*"
IN_PROCESS = "in-process"
GRAMMAR = f"{NAME}[:DEFECT[,DEFECT]|:{EVERY_DEFECT}][+{IN_PROCESS}]"
_PACKAGE_ROOT = str(Path(harness.__file__).resolve().parent.parent)


def is_spec(spec: str) -> bool:
    """A spec (or expectation name) of this family: `reference`, `reference:...` or `reference+...`."""
    return spec == NAME or spec.startswith((f"{NAME}:", f"{NAME}+"))


def parse_spec(spec: str) -> tuple[str, bool]:
    """(the spec without its options, whether `+in-process` was given); unknown options are an InputError."""
    body, *options = spec.split("+")
    in_process = False
    for option in options:
        if option == IN_PROCESS and not in_process:
            in_process = True
        elif option == IN_PROCESS:
            raise InputError(f"bad target {spec!r}: '+{IN_PROCESS}' given twice")
        else:
            raise InputError(f"bad target {spec!r}: unknown option {'+' + option!r}; expected {GRAMMAR}")
    return body, in_process


def reference_target(spec: str) -> list[Target]:
    """`reference`, `reference:a,b` (both at once) or `reference:*` (clean plus one run per defect), each `[+in-process]`."""
    body, in_process = parse_spec(spec)
    if in_process:
        _require_in_process_support(spec)
    _, _, defect_part = body.partition(":")
    if defect_part == EVERY_DEFECT:
        return [build([], in_process)] + [build([d], in_process) for d in KNOWN_DEFECTS]
    defects = [d.strip() for d in defect_part.split(",") if d.strip()] if defect_part else []
    for defect in defects:
        if defect not in KNOWN_DEFECTS:
            raise InputError(f"unknown reference defect {defect!r} in target {spec!r} (known: {', '.join(KNOWN_DEFECTS)})")
    return [build(defects, in_process)]


def name_problem(name: str) -> str | None:
    """Why a scenario's expectation can never apply to a reference target of this name, or None.

    An in-process target is judged by its subprocess twin's expectations (Target.expected_as),
    so an expectation naming it would never apply."""
    try:
        body, in_process = parse_spec(name)
        reference_target(body)
    except InputError as exc:
        return str(exc)
    if in_process:
        return (f"target {name!r} runs in-process and is held to the expectations of {body!r}; "
                f"write the expectation for {body!r}")
    return None


def _require_in_process_support(spec: str) -> None:
    try:
        import harness.fakeapi.inprocess  # noqa: F401  (httpx, respx)
        import harness.reference_agent.httpx_connection  # noqa: F401
    except ImportError as exc:
        raise InputError(f"target {spec!r}: the in-process mode needs httpx and respx, not importable here ({exc}); "
                         f"install them with {install_hint('explore')}") from None


def build(defects: list[str], in_process: bool = False) -> Target:
    name = NAME + (":" + ",".join(defects) if defects else "")
    if in_process:
        from harness.reference_agent.in_process import ARGV0, run_in_process

        head = [ARGV0]
    else:
        head = ["{python}", "-m", "harness.reference_agent"]
    base = [*head, "--output-format", "json"]
    for defect in defects:
        base += ["--defect", defect]
    append = ["--append-system-prompt", "{append}"]
    # One argument, so a text that starts with a dash stays a value; the agent ignores it when empty.
    temporary = ["--temporary={temporary}"]
    return Target(
        name=name + (f"+{IN_PROCESS}" if in_process else ""),
        commands={
            "launch": tuple(base + ["-p", "{prompt}"] + append + temporary),
            "resume": tuple(base + ["-p", "{prompt}", "--resume", "{session_id}"] + append + temporary),
            # The caller's text on every launch, /compact's included: the reference is a correct launcher too.
            "compact": tuple(base + ["--compact", "--resume", "{session_id}"] + append),
            # A step's `session: fork|continue` (harness/scenario/model.py's SESSION_MODES).
            "resume+fork": tuple(base + ["-p", "{prompt}", "--resume", "{session_id}", "--fork-session"] + append + temporary),
            "resume+continue": tuple(base + ["-p", "{prompt}", "--continue"] + append + temporary),
            "compact+fork": tuple(base + ["--compact", "--resume", "{session_id}", "--fork-session"] + append),
            "compact+continue": tuple(base + ["--compact", "--continue"] + append),
        },
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=r"(?m)^You are Reference Agent[^\n]*",
        timeout_s=60.0,
        # The agent is part of this package: make it importable from a source checkout too.
        env={"PYTHONPATH": _PACKAGE_ROOT},
        executor=InProcessSteps(run_in_process) if in_process else SubprocessSteps(),
        expected_as=name if in_process else None,
        tool_call={"name": "calculator", "input": {"expression": "6*7"}},  # its one tool
        adds_own_temporary_text=True,  # its headless instruction, code-puppy's words (reference_agent/prompt.py)
    )


FAMILY = SpecFamily(
    NAME, "'reference', 'reference:DEFECT[,DEFECT]', 'reference:*' (each [+in-process])", reference_target, name_problem,
    lines=("reference                 the clean reference agent (shipped in this package)",
           *(f"reference:{name:<34} {text}" for name, text in DEFECT_DESCRIPTIONS.items()),
           "reference:*               the clean agent plus one target per defect",
           "  +in-process                     after any reference spec: each step in the harness process through respx, "
           "not a subprocess"),
    separators=(":", "+"),
)
