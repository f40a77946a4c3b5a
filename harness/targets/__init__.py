"""Turning `--target` arguments into Targets: a registered family's names (harness/targets/registry.py) or target files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.errors import InputError
from harness.scenario import installed_rules
from harness.targets.base import Target


def resolve_target(spec: str, *, target_file_from_working_tree: bool = False) -> list[Target]:
    """One spec can stand for several targets (`reference:*` is the clean agent plus each defect).

    `FILE@REV` reads the target file as it is at REV (harness.targets.file_at_revision);
    `target_file_from_working_tree` reads the working tree's file for every revision instead.
    """
    from harness.targets import registry

    family = registry.family_for(spec)
    if family is not None:
        return family.targets(spec)
    path, rev = split_revision(spec)
    if rev is not None or path.suffix in (".yaml", ".yml") or path.exists():
        from harness.targets.target_file import load_target_file

        target = load_target_file(path, rev, target_file_from_working_tree=target_file_from_working_tree)
        return [dataclasses.replace(target, spec=spec)]
    raise InputError(registry.unknown_target_message(spec))


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
    from harness.targets import registry

    family = registry.family_for(name)
    return family.name_problem(name) if family is not None else None


# The scenario reader judges `expect:` names by this rule; it cannot import this package (it sits below it).
installed_rules.install_target_name_rule(expectation_name_problem)
