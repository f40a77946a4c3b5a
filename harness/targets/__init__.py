"""Turning `--target` arguments into Targets: built-in names or target files."""

from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.targets.base import Target


# Built-in target families: the spec prefix that names one, and its module (imported only when named).
_FAMILIES = {"claude-code": "claude_code", "code-puppy": "code_puppy", "inspect-swe": "inspect_swe",
             "codex": "codex", "gemini-cli": "gemini_cli", "qwen-code": "qwen_code", "opencode": "opencode"}
_PYDANTIC_AI = "pydantic-ai:"


def _family(spec: str):
    """The module of the built-in family a spec or expectation name belongs to, or None."""
    import importlib

    for name, module in _FAMILIES.items():
        if spec == name or spec.startswith((f"{name}@", f"{name}+")):
            return importlib.import_module(f"harness.targets.{module}")
    if spec.startswith(_PYDANTIC_AI):
        return importlib.import_module("harness.targets.pydantic_ai")
    return None


def resolve_target(spec: str, *, target_file_from_working_tree: bool = False) -> list[Target]:
    """One spec can stand for several targets (`reference:*` is the clean agent plus each defect).

    `FILE@REV` reads the target file as it is at REV (harness.targets.file_at_revision);
    `target_file_from_working_tree` reads the working tree's file for every revision instead.
    """
    from harness.targets import reference  # the reference agent is imported only when asked for

    if reference.is_spec(spec):
        return reference.reference_target(spec)
    family = _family(spec)
    if family is not None:
        return family.targets(spec)
    path, rev = split_revision(spec)
    if rev is not None or path.suffix in (".yaml", ".yml") or path.exists():
        from harness.targets.target_file import load_target_file

        return [load_target_file(path, rev, target_file_from_working_tree=target_file_from_working_tree)]
    raise InputError(
        f"unknown target {spec!r}: expected 'reference', 'reference:DEFECT[,DEFECT]', 'reference:*' (each [+in-process]), "
        "'claude-code[@VERSION][+POLICY]', 'code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]', "
        "'pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]', "
        "'inspect-swe[@VERSION][+claude-code@X.Y.Z][+pin|+no-pin][+checkout=PATH[#REV]]', "
        "'codex|gemini-cli|qwen-code|opencode[@VERSION][+POLICY]' or the path of a target file "
        "(*.yaml, or *.yaml@REV for a git revision of the code its `repo:` names)"
    )


def split_revision(spec: str) -> tuple[Path, str | None]:
    """`FILE@REV` -> (FILE, REV); any other spec is a path as written, '@' and all.

    Only the last '@' splits, and only when what precedes it is an existing file or
    looks like a target file (*.yaml, *.yml) while the whole spec is not a file itself.
    """
    head, at, rev = spec.rpartition("@")
    if not at:
        return Path(spec), None
    if not (Path(head).is_file() or (head.endswith((".yaml", ".yml")) and not Path(spec).exists())):
        return Path(spec), None
    if not rev:
        raise InputError(f"target {spec!r}: nothing after '@'; expected FILE@REV with REV a branch, tag or commit")
    return Path(head), rev


def resolve_targets(specs: list[str], *, target_file_from_working_tree: bool = False) -> list[Target]:
    targets: list[Target] = []
    for spec in specs:
        for target in resolve_target(spec, target_file_from_working_tree=target_file_from_working_tree):
            if any(t.name == target.name for t in targets):
                raise InputError(f"target {target.name!r} given twice")
            targets.append(target)
    return targets


def expectation_name_problem(name: str) -> str | None:
    """Why a scenario's expectation names a built-in target that cannot exist (it would never apply), or None.

    Globs and target-file names pass: their targets are not known until a run names them.
    """
    if any(c in name for c in "*?["):
        return None
    from harness.targets import reference

    if reference.is_spec(name):
        return reference.name_problem(name)
    family = _family(name)
    if family is not None:
        return family.name_problem(name)
    return None
