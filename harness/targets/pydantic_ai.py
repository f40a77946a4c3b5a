"""A user's own pydantic-ai agent as a target: `pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]`.

MODULE is a dotted module (imported from the current directory first) or a .py
file (relative to the current directory); FUNCTION returns a pydantic_ai.Agent.
FORMAT is the wire format the agent's model is pointed at the fake API in:
openai-chat (default), openai-responses or anthropic; `*` gives one target per
format. The same agent can say different bytes in different formats (where
run-time instructions land, whether system prompts are messages or a field), so
the format is part of the target's name in every report, default or not.

Each step is a fresh process running harness.pydantic_ai.driver; `+in-process`
runs the same step inside the harness process instead, its HTTP client routed
through respx to the same fake API (see harness/pydantic_ai/in_process.py for
what that mode cannot guarantee).

Everything is checked when the target is resolved, before any run: the spec,
that pydantic-ai is importable, the module, the function, and that the factory
returns an agent (it is called once, in a throwaway HOME and working directory).
A module without a `compact(agent, messages)` hook gets no compact command, so
a scenario's compact step is reported as unsupported by this target.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import harness
from harness import install_hint
from harness.errors import InputError
from harness.execution.in_process import InProcessSteps
from harness.execution.subprocess import SubprocessSteps
from harness.targets.base import DEFAULT_IDENTITY, SessionIdSource, Target
from harness.targets.family import SpecFamily

NAME = "pydantic-ai"
FORMATS = ("openai-chat", "openai-responses", "anthropic")
DEFAULT_FORMAT = "openai-chat"
EVERY_FORMAT = "*"
IN_PROCESS = "in-process"
_PACKAGE_ROOT = str(Path(harness.__file__).resolve().parent.parent)
_GRAMMAR = f"{NAME}:MODULE:FUNCTION[+FORMAT][+{IN_PROCESS}] (FORMAT one of {', '.join(FORMATS)}, or * for all)"


@dataclass(frozen=True)
class Spec:
    module: str  # as written: the name reports carry
    function: str
    formats: tuple[str, ...]
    in_process: bool
    format_given: bool


def is_spec(spec: str) -> bool:
    return spec.startswith(NAME + ":")


def parse_spec(spec: str) -> Spec:
    """The parts of a spec; nothing is imported."""
    if not is_spec(spec):
        raise InputError(f"bad target {spec!r}: expected {_GRAMMAR}")
    body, *options = spec[len(NAME) + 1:].split("+")
    module, colon, function = body.rpartition(":")
    if not colon or not module or not function:
        raise InputError(f"bad target {spec!r}: expected {_GRAMMAR}, e.g. {NAME}:my_agent.py:build_agent+anthropic")
    if not function.isidentifier():
        raise InputError(f"bad target {spec!r}: {function!r} is not a Python function name")
    if not module.endswith(".py") and "/" not in module and not all(p.isidentifier() for p in module.split(".")):
        raise InputError(f"bad target {spec!r}: {module!r} is neither a dotted module name nor a path to a .py file")
    formats: tuple[str, ...] | None = None
    in_process = False
    for option in options:
        if option == IN_PROCESS and not in_process:
            in_process = True
        elif option in (*FORMATS, EVERY_FORMAT) and formats is None:
            formats = FORMATS if option == EVERY_FORMAT else (option,)
        elif option == IN_PROCESS:
            raise InputError(f"bad target {spec!r}: '+{IN_PROCESS}' given twice")
        elif option in (*FORMATS, EVERY_FORMAT):
            raise InputError(f"bad target {spec!r}: a second format '+{option}'; name one format, or * for all")
        else:
            raise InputError(f"bad target {spec!r}: unknown option {'+' + option!r}; expected {_GRAMMAR}")
    return Spec(module, function, formats or (DEFAULT_FORMAT,), in_process, formats is not None)


def target_name(spec: Spec, fmt: str) -> str:
    return f"{NAME}:{spec.module}:{spec.function}+{fmt}" + (f"+{IN_PROCESS}" if spec.in_process else "")


def name_problem(name: str) -> str | None:
    """Why no pydantic-ai target can carry this name (reports always spell the format), or None."""
    try:
        spec = parse_spec(name)
    except InputError as exc:
        return str(exc)
    if not spec.format_given:
        return (f"target {name!r}: a pydantic-ai target is always named with its format "
                f"(e.g. {target_name(spec, DEFAULT_FORMAT)}); or use a glob such as {NAME}:*:{spec.function}+*")
    return None


def targets(spec_text: str, cwd: Path | None = None) -> list[Target]:
    spec = parse_spec(spec_text)
    cwd = (cwd or Path.cwd()).resolve()
    module_arg = spec.module
    from harness.pydantic_ai.loading import is_file_reference

    if is_file_reference(spec.module):
        path = (cwd / spec.module).resolve()
        if not path.is_file():
            raise InputError(f"target {spec_text!r}: no such file {spec.module!r} (relative to {cwd})")
        module_arg = str(path)
    has_compact = _validate(spec_text, module_arg, spec.function, str(cwd))
    return [build(spec, fmt, module_arg, str(cwd), has_compact) for fmt in spec.formats]


def _validate(spec_text: str, module_arg: str, function: str, search_path: str) -> bool:
    """Import the module and call the factory once, in a throwaway HOME and working directory; True if it can compact."""
    try:
        import pydantic_ai  # noqa: F401
        from harness.execution.in_process import sandboxed
        from harness.pydantic_ai import loading
    except ImportError as exc:
        raise InputError(f"target {spec_text!r}: pydantic-ai is not importable by this interpreter ({exc}); "
                         f"install it with {install_hint('pydantic-ai')}") from None
    scratch = Path(tempfile.mkdtemp(prefix="harness-pydantic-ai-check-"))
    try:
        (scratch / "home").mkdir()
        (scratch / "work").mkdir()
        env = {"HOME": str(scratch / "home"), "TMPDIR": str(scratch), "PATH": "/usr/bin:/bin"}
        with sandboxed(env, scratch / "work"):
            module_obj = loading.load_module(module_arg, search_path)
            factory = loading.factory_of(module_obj, module_arg, function)
            loading.build_agent(factory, f"{module_arg}:{function}")
        return loading.compact_hook(module_obj) is not None
    except loading.LoadError as exc:
        raise InputError(f"target {spec_text!r}: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build(spec: Spec, fmt: str, module_arg: str, search_path: str, has_compact: bool) -> Target:
    from harness.pydantic_ai.in_process import ARGV0, run_in_process

    def literal(text: str) -> str:  # argv templates: a path's braces are not placeholders
        return text.replace("{", "{{").replace("}", "}}")

    driver_args = [
        "--module", literal(module_arg), "--function", spec.function, "--search-path", literal(search_path),
        "--format", fmt, "--base-url", "{base_url}", "--api-key", "{api_key}",
    ]
    head = [ARGV0] if spec.in_process else ["{python}", "-m", "harness.pydantic_ai.driver"]
    turn = ["--prompt", "{prompt}", "--temporary", "{temporary}"]
    commands = {
        "launch": (*head, *driver_args, "--kind", "launch", *turn),
        "resume": (*head, *driver_args, "--kind", "resume", "--session-id", "{session_id}", *turn),
        "retry": (*head, *driver_args, "--kind", "retry", "--session-id", "{session_id}", *turn),
    }
    if has_compact:
        commands["compact"] = (*head, *driver_args, "--kind", "compact", "--session-id", "{session_id}")
    return Target(
        name=target_name(spec, fmt),
        commands=commands,
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=DEFAULT_IDENTITY,
        timeout_s=60.0,
        env={"PYTHONPATH": literal(_PACKAGE_ROOT)},  # the driver is part of this package, importable from a checkout too
        executor=InProcessSteps(run_in_process) if spec.in_process else SubprocessSteps(),
        # The example agent adds code-puppy's headless instruction (examples/pydantic-ai-agent); a user's agent that
        # adds none is an error there, as the scenario's text is then in no request.
        adds_own_temporary_text=True,
    )


FAMILY = SpecFamily(
    NAME, "'pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]'", targets, name_problem,
    lines=("pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]  your pydantic-ai agent, from a factory returning it",
           "  +openai-chat (default), +openai-responses, +anthropic, +*   the wire format its model speaks",
           "  +in-process                     each step in the harness process through respx, not a subprocess"),
    separators=(":",), bare=False,
)
