"""Turning `--target` arguments into Targets: built-in names or target files."""

from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.targets.base import Target


def resolve_target(spec: str) -> list[Target]:
    """One spec can stand for several targets (`reference:*` is the clean agent plus each defect)."""
    from harness.targets import reference  # the reference agent is imported only when asked for

    name = spec.split(":", 1)[0]
    if name == reference.NAME:
        return reference.reference_target(spec)
    if spec == "claude-code" or spec.startswith(("claude-code@", "claude-code+")):
        from harness.targets import claude_code

        return claude_code.claude_code_targets(spec)
    if spec.startswith("pydantic-ai:"):
        from harness.targets import pydantic_ai

        return pydantic_ai.pydantic_ai_targets(spec)
    if spec == "code-puppy" or spec.startswith(("code-puppy@", "code-puppy+")):
        from harness.targets import code_puppy

        return code_puppy.code_puppy_targets(spec)
    path, rev = split_revision(spec)
    if rev is not None or path.suffix in (".yaml", ".yml") or path.exists():
        from harness.targets.command import load_target_file

        return [load_target_file(path, rev)]
    raise InputError(
        f"unknown target {spec!r}: expected 'reference', 'reference:DEFECT[,DEFECT]', 'reference:*', "
        "'claude-code[@VERSION][+POLICY]', 'pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]', 'code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]' or the path of a target file (*.yaml, or *.yaml@REV for a git revision "
        "of the code its `repo:` names)"
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


def resolve_targets(specs: list[str]) -> list[Target]:
    targets: list[Target] = []
    for spec in specs:
        for target in resolve_target(spec):
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
    if name.split(":", 1)[0] == "reference":
        from harness.targets import reference

        try:
            reference.reference_target(name)
        except InputError as exc:
            return str(exc)
        return None
    if name == "claude-code" or name.startswith(("claude-code@", "claude-code+")):
        from harness.targets import claude_code

        return claude_code.name_problem(name)
    if name.startswith("pydantic-ai:"):
        from harness.targets import pydantic_ai

        return pydantic_ai.name_problem(name)
    if name == "code-puppy" or name.startswith(("code-puppy@", "code-puppy+")):
        from harness.targets import code_puppy

        return code_puppy.name_problem(name)
    return None
