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
from harness.scenario.model import (
    STEP_KINDS,
    WORKDIR_KINDS,
    Scenario,
    Step,
    Turn,
)
from harness.scenario.checks_section import APPEND_CHECK, CACHE_CHECK, LAUNCH_APPEND_CHECK, TEMPORARY_CHECK, ChecksReader
from harness.documents.located import (
    LocatedDict,
    LocatedList,
    child_path,
    describe,
    item_path,
    load_located,
    load_located_file,
    unknown_key_error,
)

SCENARIO_SUFFIXES = (".yaml", ".yml")
FOUND_FOLDER = "found"  # harness explore's inbox (see find_scenario_files)
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"

_NAME_RE = re.compile(NAME_PATTERN)
_TOP_KEYS = ("name", "description", "append", "temporary", "min_cache_reuse", "workdir", "steps", "checks", "expect")
_WORKDIR_STEP_KEYS = ("edit", "commit")  # changes to the working directory before the step's process starts
_DECLARED_STEP_KEYS = ("temporary", "prefix_change")  # what the scenario tells the checks about this step
_PROMPT_STEP_KEYS = ("prompt", "reply", "error", "summary", "usage", "timeout_s", *_WORKDIR_STEP_KEYS, *_DECLARED_STEP_KEYS)
_COMPACT_STEP_KEYS = ("reply", "summary", "usage", "timeout_s", *_WORKDIR_STEP_KEYS, *_DECLARED_STEP_KEYS)
_LAUNCHER_TEXT = "it stands for text the agent's launcher passes it as a process argument"  # top-level temporary


class _ScenarioReader(ChecksReader):
    """Validates one parsed scenario document; ``self.path`` goes into every error."""

    # ------------------------------------------------------------------ document

    def scenario(self, doc: Any) -> tuple[Scenario, int | None]:
        if doc is None:
            raise self.error("empty file: expected a scenario mapping with at least 'name' and 'steps'", 1, "")
        if not isinstance(doc, LocatedDict):
            raise self.error(
                f"the top level must be a mapping with 'name' and 'steps', got {describe(doc)}",
                getattr(doc, "line", 1),
                "",
            )
        self.known_keys(doc, _TOP_KEYS, "")

        name_value = self.require(doc, "name", "")
        name_line = doc.key_line("name")
        name = self.string(name_value, name_line, "name", non_empty=True)
        if not _NAME_RE.fullmatch(name):
            raise self.error(f"expected a name matching {NAME_PATTERN}, got {name!r}", name_line, "name")

        description = self.optional_string(doc, "description", "") or ""
        append = self.optional_argument(doc, "append", "")
        temporary = self.temporary_texts(doc)
        min_cache_reuse = None
        if "min_cache_reuse" in doc:
            min_cache_reuse = self.ratio(doc["min_cache_reuse"], doc.key_line("min_cache_reuse"), "min_cache_reuse")

        workdir = self.optional_string(doc, "workdir", "") or "plain"
        if workdir not in WORKDIR_KINDS:
            raise self.error(f"expected one of {', '.join(WORKDIR_KINDS)}, got {workdir!r}", doc.key_line("workdir"), "workdir")

        steps_value = self.require(doc, "steps", "")
        steps_list = self.list_(steps_value, doc.key_line("steps"), "steps", "a non-empty list of steps")
        steps = tuple(self.step(steps_list, i) for i in range(len(steps_list)))
        for step in steps:
            if step.commit is not None and workdir != "git":
                raise self.error(
                    "'commit' needs a git working directory: add a top-level 'workdir: git'",
                    step.line,
                    child_path(item_path("steps", step.index - 1), step.kind),
                )

        declared = {
            APPEND_CHECK: append is not None,
            LAUNCH_APPEND_CHECK: append is not None,
            TEMPORARY_CHECK: bool(temporary) or any(s.temporary for s in steps),
            CACHE_CHECK: min_cache_reuse is not None,
        }
        checks = self.checks(doc, declared)
        expect = self.expect(doc, checks)
        scenario = Scenario(
            name=name,
            steps=steps,
            checks=checks,
            description=description,
            append=append,
            expect=expect,
            path=Path(self.path) if self.path is not None else None,
            workdir=workdir,
            temporary=temporary,
            min_cache_reuse=min_cache_reuse,
        )
        return scenario, name_line

    def temporary_texts(self, doc: LocatedDict) -> tuple[str, ...]:
        """`temporary: TEXT` or a list of texts: what the agent adds to every run, never to the prefix or history."""
        if "temporary" not in doc:
            return ()
        value, line = doc["temporary"], doc.key_line("temporary")
        if isinstance(value, str):
            return (self.argument(value, line, "temporary", carried_as=_LAUNCHER_TEXT),)
        items = self.list_(value, line, "temporary", "a text or a non-empty list of texts")
        return tuple(
            self.argument(item, items.item_line(i), item_path("temporary", i), carried_as=_LAUNCHER_TEXT)
            for i, item in enumerate(items)
        )

    def ratio(self, value: Any, line: int | None, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.error(f"expected a number from 0 to 1 (cached tokens / prompt tokens), got {describe(value)}", line, where)
        return float(value)

    # ------------------------------------------------------------------ steps

    def step(self, steps: LocatedList, i: int) -> Step:
        where = item_path("steps", i)
        line = steps.item_line(i)
        item = steps[i]
        kinds = ", ".join(STEP_KINDS)
        if isinstance(item, str) and item in STEP_KINDS:
            raise self.error(
                f"expected a mapping with one step kind ({kinds}), got {describe(item)}; write '{item}: {{}}'",
                line,
                where,
            )
        m = self.mapping(item, line, where, f"a mapping with one step kind ({kinds})")
        if not m:
            raise self.error(f"expected a mapping with one step kind ({kinds}), got an empty mapping", line, where)
        if len(m) > 1:
            keys = list(m)
            named = ", ".join(repr(k) for k in keys)
            kind_keys = [k for k in keys if k in STEP_KINDS]
            hint = ""
            if len(kind_keys) == 1:
                hint = f"; indent the step's settings under '{kind_keys[0]}:'"
            raise self.error(
                f"a step has exactly one key, its kind ({kinds}); got {named}{hint}",
                m.key_line(keys[1]),
                where,
            )
        (kind,) = m
        kind_line = m.key_line(kind)
        if kind not in STEP_KINDS:
            raise unknown_key_error(kind, STEP_KINDS, self.path, kind_line, where, what="step kind")
        where = child_path(where, kind)
        if i == 0 and kind != "launch":
            raise self.error(f"the first step must be 'launch', got {kind!r}", kind_line, where)
        if i > 0 and kind == "launch":
            raise self.error(
                "'launch' may only be the first step (one scenario is one session; "
                "continue it with 'resume' or 'retry')",
                kind_line,
                where,
            )

        body = m[kind]
        if body is None:
            body = LocatedDict(kind_line)
        body = self.mapping(body, kind_line, where, "a mapping of step settings (or nothing)")

        if kind == "compact":
            if "prompt" in body:
                raise self.error(
                    "'prompt' is not allowed on a compact step: compaction sends no prompt "
                    f"(allowed: {', '.join(sorted(_COMPACT_STEP_KEYS))})",
                    body.key_line("prompt"),
                    where,
                )
            self.known_keys(body, _COMPACT_STEP_KEYS, where)
            prompt = None
        else:
            self.known_keys(body, _PROMPT_STEP_KEYS, where)
            prompt_value = self.require(body, "prompt", where)
            prompt = self.argument(prompt_value, body.key_line("prompt"), child_path(where, "prompt"))

        turns: tuple[Turn, ...] = ()
        if "reply" in body:
            turns = self.reply(body["reply"], body.key_line("reply"), child_path(where, "reply"))
        error = None
        if "error" in body:
            if "reply" in body:
                raise self.error(
                    "a step has 'reply' (what the model says) or 'error' (every request of the step fails), not both; "
                    "for one failed request among replies, put '- error: {...}' in the reply list",
                    body.key_line("error"),
                    where,
                )
            error = self.api_error(body["error"], body.key_line("error"), child_path(where, "error"))
        summary = self.optional_string(body, "summary", where)
        usage = None
        if "usage" in body:
            usage = self.usage(body["usage"], body.key_line("usage"), child_path(where, "usage"))
        timeout_s = None
        if "timeout_s" in body:
            timeout_s = self.positive_number(body["timeout_s"], body.key_line("timeout_s"), child_path(where, "timeout_s"))
        edits: tuple[tuple[str, str], ...] = ()
        if "edit" in body:
            edits = self.edits(body["edit"], body.key_line("edit"), child_path(where, "edit"))
        commit = self.optional_argument(body, "commit", where, carried_as="it is git commit's message argument")
        temporary = self.optional_argument(body, "temporary", where)
        prefix_change = self.optional_string(body, "prefix_change", where, non_empty=True)
        if prefix_change is not None and i == 0:
            raise self.error(
                "the first step sets the prefix; 'prefix_change' declares a change at a later step",
                body.key_line("prefix_change"), child_path(where, "prefix_change"),
            )
        return Step(
            index=i + 1,
            kind=kind,
            prompt=prompt,
            turns=turns,
            summary=summary,
            usage=usage,
            timeout_s=timeout_s,
            line=line,
            edits=edits,
            commit=commit,
            error=error,
            temporary=temporary,
            prefix_change=prefix_change,
        )

    def edits(self, value: Any, line: int | None, where: str) -> tuple[tuple[str, str], ...]:
        """`edit: {relative/path: new content}`; paths stay inside the working directory."""
        m = self.mapping(value, line, where, "a mapping of relative file path -> new content")
        if not m:
            raise self.error("expected at least one file to write, got an empty mapping", line, where)
        out = []
        for name, content in m.items():
            key_where = child_path(where, str(name))
            key_line = m.key_line(name)
            if not isinstance(name, str) or not name.strip():
                raise self.error(f"expected a relative file path as key, got {describe(name)}", key_line, where)
            self.argument(name, key_line, key_where, carried_as="it is a file path")
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or ".." in parts or parts[0] == ".git":
                raise self.error(
                    f"expected a path inside the working directory (relative, no '..', not under .git), got {name!r}",
                    key_line,
                    key_where,
                )
            out.append((name, self.string(content, key_line, key_where)))
        return tuple(out)


# --------------------------------------------------------------------------- public API


def parse_scenario(text: str, path: str | Path | None = None) -> Scenario:
    """Validate scenario YAML given as text; ``path`` is used in errors and as Scenario.path."""
    return _ScenarioReader(path).scenario(load_located(text, path))[0]


def _load_with_name_line(path: Path) -> tuple[Scenario, int | None]:
    return _ScenarioReader(path).scenario(load_located_file(path))


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    return _load_with_name_line(Path(path))[0]


def scenario_from_text(text: str, path: str | Path | None = None) -> Scenario:
    """Read and validate a scenario held in memory (`harness explore` runs exactly what it would write)."""
    return _ScenarioReader(Path(path) if path is not None else None).scenario(load_located(text, path))[0]


def find_scenario_files(path: str | Path) -> list[Path]:
    """``path`` itself if a file; else its *.yaml / *.yml files, recursively, sorted, hidden entries skipped.

    A folder named `found` below ``path`` is skipped: it is `harness explore`'s inbox of failing
    sequences, replayed when named (`harness run scenarios/found`), and kept out of the library's
    runs until a scenario is moved into the library.
    """
    path = Path(path)
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
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != FOUND_FOLDER)
        for name in files:
            if not name.startswith(".") and name.endswith(SCENARIO_SUFFIXES):
                found.append(Path(root) / name)
    if not found:
        raise InputError(f"no scenario files ({', '.join('*' + s for s in SCENARIO_SUFFIXES)}) in this directory", path)
    return sorted(found, key=lambda p: p.relative_to(path).parts)


def load_scenarios(paths: Iterable[str | Path] | str | Path) -> list[Scenario]:
    """Load every scenario under ``paths`` (files or directories), in order.

    A file reached twice (named and also inside a named directory) is loaded
    once; two different files with the same scenario name are an error.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise InputError("no scenario files or directories given")
    files: list[Path] = []
    seen_files: set[Path] = set()
    for given in paths:
        for file in find_scenario_files(given):
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
