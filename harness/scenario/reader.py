"""Scenario files: YAML in, validated Scenario dataclasses out.

Every rejection is an InputError naming the file, the 1-based line and the key
path (``steps[2].retry.reply[1].tool_use.name``; list positions count from 1),
so a broken scenario stops the run with exit 2 and is never skipped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from harness.errors import InputError
from harness.documents.located import LocatedDict, child_path, describe, item_path, load_located, load_located_file
from harness.documents.reader import Reader
from harness.scenario.checks_section import (APPEND_CHECK, CACHE_CHECK, INSTRUCTIONS_CHECK, LAUNCH_APPEND_CHECK,
                                             TEMPORARY_CHECK, ChecksReader)
from harness.scenario.failures import FailureReader
from harness.scenario.incident import IncidentReader
from harness.scenario.model import WORKDIR_KINDS, Scenario
from harness.scenario.replies import ReplyReader
from harness.scenario.steps import StepsReader

SCENARIO_SUFFIXES = (".yaml", ".yml")
FOUND_FOLDER = "found"  # harness explore's inbox (see find_scenario_files)
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"

_NAME_RE = re.compile(NAME_PATTERN)
_TOP_KEYS = ("name", "description", "append", "temporary", "min_cache_reuse", "workdir", "steps", "checks", "expect",
             "incident", "instruction_files")
_LAUNCHER_TEXT = "it stands for text the agent's launcher passes it as a process argument"  # top-level temporary
# A target file's own keys (harness/targets/target_file.py): with no `steps`, the file describes an agent, not a
# scenario. launch and resume count only as argv lists: a scenario's step written without `steps:` is a mapping.
_TARGET_FILE_KEYS = ("protocol", "session_id", "launch", "resume")


class _ScenarioReader:
    """Validates one parsed scenario document: the top-level keys here, each section by its own reader.

    One Reader (the shared vocabulary, bound to the file's path) is handed to
    every section reader, so all of them name the file alike.
    """

    def __init__(self, path: str | Path | None):
        self.file = Reader(path)
        failures = FailureReader(self.file)
        self.steps = StepsReader(self.file, ReplyReader(self.file, failures), failures)
        self.checks_and_expect = ChecksReader(self.file)
        self.incidents = IncidentReader(self.file)

    def scenario(self, doc: Any) -> tuple[Scenario, int | None]:
        if doc is None:
            raise self.file.error("empty file: expected a scenario mapping with at least 'name' and 'steps'", 1, "")
        if not isinstance(doc, LocatedDict):
            raise self.file.error(
                f"the top level must be a mapping with 'name' and 'steps', got {describe(doc)}",
                getattr(doc, "line", 1),
                "",
            )
        self.refuse_target_file(doc)
        self.file.known_keys(doc, _TOP_KEYS, "")

        name_value = self.file.require(doc, "name", "")
        name_line = doc.key_line("name")
        name = self.file.string(name_value, name_line, "name", non_empty=True)
        if not _NAME_RE.fullmatch(name):
            raise self.file.error(f"expected a name matching {NAME_PATTERN}, got {name!r}", name_line, "name")

        description = self.file.optional_string(doc, "description", "") or ""
        append = self.file.optional_argument(doc, "append", "")
        temporary = self.temporary_texts(doc)
        min_cache_reuse = None
        if "min_cache_reuse" in doc:
            min_cache_reuse = self.ratio(doc["min_cache_reuse"], doc.key_line("min_cache_reuse"), "min_cache_reuse")

        workdir = self.file.optional_string(doc, "workdir", "") or "plain"
        if workdir not in WORKDIR_KINDS:
            raise self.file.error(f"expected one of {', '.join(WORKDIR_KINDS)}, got {workdir!r}", doc.key_line("workdir"), "workdir")

        steps_value = self.file.require(doc, "steps", "")
        steps_list = self.file.list_(steps_value, doc.key_line("steps"), "steps", "a non-empty list of steps")
        steps = tuple(self.steps.step(steps_list, i) for i in range(len(steps_list)))
        for step in steps:
            if step.append is not None and append is None:
                raise self.file.error(
                    "a step's 'append' changes the caller's text: the scenario needs a top-level 'append' to start from",
                    step.line, child_path(item_path("steps", step.index - 1), step.kind),
                )
            if step.commit is not None and workdir != "git":
                raise self.file.error(
                    "'commit' needs a git working directory: add a top-level 'workdir: git'",
                    step.line,
                    child_path(item_path("steps", step.index - 1), step.kind),
                )

        declared = {
            APPEND_CHECK: append is not None,
            LAUNCH_APPEND_CHECK: append is not None,
            TEMPORARY_CHECK: bool(temporary) or any(s.temporary for s in steps),
            CACHE_CHECK: min_cache_reuse is not None,
            INSTRUCTIONS_CHECK: "instruction_files" in doc,
        }
        instruction_files = self.instruction_files(doc, steps)
        checks = self.checks_and_expect.checks(doc, declared)
        expect = self.checks_and_expect.expect(doc, checks)
        scenario = Scenario(
            name=name,
            steps=steps,
            checks=checks,
            description=description,
            append=append,
            expect=expect,
            path=Path(self.file.path) if self.file.path is not None else None,
            workdir=workdir,
            temporary=temporary,
            min_cache_reuse=min_cache_reuse,
            incident=self.incidents.incident(doc),
            instruction_files=instruction_files,
        )
        return scenario, name_line

    def refuse_target_file(self, doc: LocatedDict) -> None:
        """A target file reached as a scenario (in a folder of them, or named): said so, not its first unknown key."""
        if "steps" in doc:
            return
        found = sorted((key for key in _TARGET_FILE_KEYS
                        if key in doc and (key not in ("launch", "resume") or isinstance(doc[key], list))),
                       key=lambda key: doc.key_line(key) or 0)
        if found:
            has = ", ".join(found[:-1]) + " and " + found[-1] if len(found) > 1 else found[0]
            raise self.file.error(f"this is a target file, not a scenario (it has {has} but no steps); "
                                  f"pass it with --target {self.file.path or 'FILE'}", doc.key_line(found[0]), "")

    def instruction_files(self, doc: LocatedDict, steps) -> tuple[str, ...]:
        """`instruction_files: [PATH, ...]`: each one written by some step's `edit:`, or there is no text to look for."""
        if "instruction_files" not in doc:
            return ()
        line = doc.key_line("instruction_files")
        items = self.file.list_(doc["instruction_files"], line, "instruction_files", "a non-empty list of file paths")
        edited = {path for step in steps for path, _ in step.edits}
        paths = []
        for i, item in enumerate(items):
            where = item_path("instruction_files", i)
            path = self.file.string(item, items.item_line(i), where, non_empty=True)
            if path not in edited:
                known = f" (edited: {', '.join(sorted(edited))})" if edited else ""
                raise self.file.error(f"{path!r} is written by no step's 'edit:', so there is no text of it to look "
                                      f"for{known}", items.item_line(i), where)
            paths.append(path)
        return tuple(paths)

    def temporary_texts(self, doc: LocatedDict) -> tuple[str, ...]:
        """`temporary: TEXT` or a list of texts: what the agent adds to every run, never to the prefix or history."""
        if "temporary" not in doc:
            return ()
        value, line = doc["temporary"], doc.key_line("temporary")
        if isinstance(value, str):
            return (self.file.argument(value, line, "temporary", carried_as=_LAUNCHER_TEXT),)
        items = self.file.list_(value, line, "temporary", "a text or a non-empty list of texts")
        return tuple(
            self.file.argument(item, items.item_line(i), item_path("temporary", i), carried_as=_LAUNCHER_TEXT)
            for i, item in enumerate(items)
        )

    def ratio(self, value: Any, line: int | None, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.file.error(f"expected a number from 0 to 1 (cached tokens / prompt tokens), got {describe(value)}", line, where)
        return float(value)

# --------------------------------------------------------------------------- public API


def _load_with_name_line(path: Path) -> tuple[Scenario, int | None]:
    return _ScenarioReader(path).scenario(load_located_file(path))


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    return _load_with_name_line(Path(path))[0]


def scenario_from_text(text: str, path: str | Path | None = None) -> Scenario:
    """Read and validate a scenario held in memory; ``path`` names it in errors and becomes Scenario.path.

    What `harness explore`, `minimize` and `import` write is read back through here before it is trusted.
    """
    return _ScenarioReader(path).scenario(load_located(text, path))[0]


def find_scenario_files(path: str | Path, skip: Iterable[Path] = ()) -> list[Path]:
    """``path`` itself if a file; else its *.yaml / *.yml files, recursively, sorted, hidden entries skipped.

    A folder named `found` below ``path`` is skipped: it is `harness explore`'s inbox of failing
    sequences, replayed when named (`harness run scenarios/found`), and kept out of the library's
    runs until a scenario is moved into the library; so are the folders in ``skip`` (a project's
    inbox of another name), never read.
    """
    path = Path(path)
    skipped = {Path(p).resolve() for p in skip}
    if path.is_file():
        return [path]
    if not path.exists():
        raise InputError("no such file or directory", path)
    if not path.is_dir():
        raise InputError("not a regular file or a directory", path)

    def walk_error(error: OSError) -> None:
        raise InputError(f"cannot read the directory: {error.strerror or error}", error.filename or path)

    found: list[Path] = []
    for root, dirs, files in os.walk(path, onerror=walk_error):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != FOUND_FOLDER
                         and (Path(root) / d).resolve() not in skipped)
        for name in files:
            if not name.startswith(".") and name.endswith(SCENARIO_SUFFIXES):
                found.append(Path(root) / name)
    if not found:
        raise InputError(f"no scenario files ({', '.join('*' + s for s in SCENARIO_SUFFIXES)}) in this directory", path)
    return sorted(found, key=lambda p: p.relative_to(path).parts)


def load_scenarios(paths: Iterable[str | Path] | str | Path, skip: Iterable[Path] = ()) -> list[Scenario]:
    """Load every scenario under ``paths`` (files or directories), in order.

    A file reached twice (named and also inside a named directory) is loaded
    once; two different files with the same scenario name are an error.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise InputError("no scenario files or directories given")
    skip = tuple(skip)
    files: list[Path] = []
    seen_files: set[Path] = set()
    for given in paths:
        for file in find_scenario_files(given, skip):
            key = file.resolve()
            if key not in seen_files:
                seen_files.add(key)
                files.append(file)
    scenarios: list[Scenario] = []
    names: dict[str, tuple[Path, int | None]] = {}
    for file in files:
        scenario, name_line = _load_with_name_line(file)
        if scenario.name in names:
            other, other_line = names[scenario.name]
            raise InputError(
                f"name: duplicate scenario name {scenario.name!r}, also used in {other}:{other_line}",
                file,
                name_line,
            )
        names[scenario.name] = (file, name_line)
        scenarios.append(scenario)
    return scenarios
