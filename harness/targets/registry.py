"""The one list of target families: `--target` resolution, `harness targets`, `harness install` and the error read it.

Built-in families are named here with their modules, imported only when a
spec could be theirs (or when all are listed); another package adds a family
through the `harness.target_families` entry-point group, whose object is a
TargetFamily. A target file (a path) is the fallback after every family.
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points

from harness.errors import InputError
from harness.targets.family import TargetFamily

ENTRY_POINT_GROUP = "harness.target_families"
# (family name, module holding its FAMILY), in the order the listing and the error show them.
BUILT_IN = (("reference", "reference"), ("claude-code", "claude_code"), ("code-puppy", "code_puppy"),
            ("pydantic-ai", "pydantic_ai"), ("inspect-swe", "inspect_swe"), ("codex", "codex"),
            ("gemini-cli", "gemini_cli"), ("qwen-code", "qwen_code"), ("opencode", "opencode"),
            ("claude-agent-sdk", "claude_agent_sdk"), ("claude-agent-sdk-ts", "claude_agent_sdk_ts"))
TARGET_FILE_GRAMMAR = "the path of a target file (*.yaml, or *.yaml@REV for a git revision of the code its `repo:` names)"
TARGET_FILE_LISTING = "PATH.yaml                 a target file describing any agent (docs/reference/target-file.md)"


def _built_in(module: str) -> TargetFamily:
    return importlib.import_module(f"harness.targets.{module}").FAMILY


@functools.cache
def installed_families() -> tuple[TargetFamily, ...]:
    """The families other packages register; a broken or clashing one is an InputError naming it."""
    found: list[TargetFamily] = []
    names = {name for name, _ in BUILT_IN}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        where = f"target family entry point {point.name!r} ({point.value})"
        try:
            family = point.load()
        except Exception as exc:  # whatever the other package raises, one line, not a traceback
            raise InputError(f"{where} does not load: {type(exc).__name__}: {exc}") from None
        if not isinstance(family, TargetFamily) or not isinstance(family.name, str):
            raise InputError(f"{where} is not a target family (needs name, grammar, matches, targets, "
                             "name_problem, listing, install_defaults)")
        if family.name in names:
            raise InputError(f"{where}: a target family named {family.name!r} is already registered")
        names.add(family.name)
        found.append(family)
    return tuple(found)


def families() -> list[TargetFamily]:
    """Every family, built-in first, in listing order."""
    return [_built_in(module) for _, module in BUILT_IN] + list(installed_families())


def family_for(spec: str) -> TargetFamily | None:
    """The family a spec or expectation name belongs to, or None (a target file, or nothing known)."""
    for name, module in BUILT_IN:
        if spec.startswith(name) and _built_in(module).matches(spec):
            return _built_in(module)
    return next((f for f in installed_families() if f.matches(spec)), None)


def unknown_target_message(spec: str) -> str:
    """Every grammar a spec could have had; families sharing one grammar are named together (codex|gemini-cli)."""
    groups: list[tuple[list[str], str]] = []  # ([names], the grammar after the name) or ([], a whole grammar)
    for family in families():
        prefix = f"'{family.name}"
        tail = family.grammar[len(prefix):] if family.grammar.startswith(prefix) else None
        if tail is not None and groups and groups[-1][0] and groups[-1][1] == tail:
            groups[-1][0].append(family.name)
        else:
            groups.append(([family.name], tail) if tail is not None else ([], family.grammar))
    grammars = ["'" + "|".join(names) + tail if names else tail for names, tail in groups]
    return f"unknown target {spec!r}: expected {', '.join(grammars)} or {TARGET_FILE_GRAMMAR}"


def listing() -> list[str]:
    """The lines of `harness targets`."""
    return [line for family in families() for line in family.listing()] + [TARGET_FILE_LISTING]


def install_defaults() -> list[str]:
    """What `harness install` installs when named nothing: each family's pinned (and compared) versions."""
    return [spec for family in families() for spec in family.install_defaults()]
