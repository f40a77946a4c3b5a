"""A project's `[tool.harness]` table (pyproject.toml) or harness.toml: the defaults a team writes once.

The CLI and the pytest plugin read the same table, and a flag given on the
command line overrides it, as pytest's ini options and ruff's settings work.
It is found by walking up from the folder the harness starts in (pytest: its
rootdir) to the first harness.toml, or pyproject.toml holding a
`[tool.harness]` table; harness.toml wins in one folder. Relative paths in it
are relative to the file's folder, so `harness run` means the same from any
subfolder. An unknown key or a value of the wrong kind is bad input (exit 2)
naming the file, the line and the key: a typo must not silently fall back to
a default, which would run something other than what the team wrote.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.toml_lines import key_line
from harness.documents.located import unknown_key_error
from harness.errors import InputError

PYPROJECT, OWN_FILE = "pyproject.toml", "harness.toml"
TABLE = ("tool", "harness")
DEFAULT_SCENARIOS = "scenarios"
DEFAULT_REPORTS = "reports"
DEFAULT_INBOX = "scenarios/found"
DEFAULT_IMPORTS = "scenarios/imported"
TOOLS_ENV = "HARNESS_TOOLS_DIR"
# What each key holds, as its reader; the order is the order `harness init` writes them and the docs list them.
KEYS = ("scenarios", "targets", "report_dir", "explore_inbox", "imports_dir", "tools_dir", "workers", "suites")
SUITE_KEYS = ("scenarios", "targets", "workers")
ALL_SUITES = "all"


@dataclass(frozen=True)
class Suite:
    """A named set of scenario paths × targets: `harness run --suite NAME`, one report for all named."""

    name: str
    scenarios: tuple[str, ...]
    targets: tuple[str, ...]
    workers: int | None = None


@dataclass(frozen=True)
class Config:
    """The table's values with defaults filled in; `path` None when no configuration was found."""

    path: Path | None = None
    folder: Path = field(default_factory=Path.cwd)
    scenarios: tuple[str, ...] = (DEFAULT_SCENARIOS,)
    targets: tuple[str, ...] = ()
    report_dir: str = DEFAULT_REPORTS
    explore_inbox: str = DEFAULT_INBOX
    imports_dir: str = DEFAULT_IMPORTS
    tools_dir: str | None = None
    workers: int = 1
    suites: tuple[Suite, ...] = ()

    def place(self, value: str) -> str:
        """A path from the table as the commands use it: relative to the current folder when it lies below it."""
        path = Path(value).expanduser()
        return shown(path if path.is_absolute() else self.folder / path)

    def inbox(self) -> Path:
        """Explore's inbox, resolved: its findings are replayed when named, and otherwise kept out of the library."""
        return Path(self.place(self.explore_inbox)).resolve()

    def scenario_paths(self) -> list[str]:
        return [self.place(p) for p in self.scenarios]

    def target_specs(self, specs: tuple[str, ...] | None = None) -> list[str]:
        """Target specs from the table, a target file's path rebased on the table's folder (family specs as written)."""
        return [_rebase_file_spec(spec, self.folder) for spec in (self.targets if specs is None else specs)]

    def suite(self, name: str) -> Suite:
        for suite in self.suites:
            if suite.name == name:
                return suite
        known = ", ".join(s.name for s in self.suites) or "none"
        where = str(self.path) if self.path else "no configuration file was found"
        raise InputError(f"--suite {name!r}: no such suite in {where} (suites: {known}; `{ALL_SUITES}` runs every one)")

    def chosen_suites(self, names: list[str]) -> list[Suite]:
        """The suites named (in the table's order for `all`), each once."""
        if ALL_SUITES in names:
            if not self.suites:
                raise InputError(f"--suite {ALL_SUITES}: {self.path or 'no configuration file'} defines no suites "
                                 "([tool.harness.suites.NAME] tables with scenarios and targets)")
            return list(self.suites)
        chosen: list[Suite] = []
        for name in names:
            suite = self.suite(name)
            if suite not in chosen:
                chosen.append(suite)
        return chosen

    def tools_folder(self) -> Path:
        """$HARNESS_TOOLS_DIR, else the table's tools_dir, else the user's cache folder."""
        if os.environ.get(TOOLS_ENV):
            return Path(os.environ[TOOLS_ENV]).expanduser().resolve()
        if self.tools_dir is not None:
            path = Path(self.tools_dir).expanduser()
            return (path if path.is_absolute() else self.folder / path).resolve()
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "harness" / "tools"


def shown(path: Path) -> str:
    """`path` as a user in the current folder writes it: relative below that folder, absolute elsewhere."""
    try:
        return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd().resolve()) else str(path)
    except ValueError:
        return str(path)


def _rebase_file_spec(spec: str, folder: Path) -> str:
    """`agent.yaml@main` written in the table names a file beside the table, whichever folder harness runs in.

    The last '@' splits a revision off, as the target registry splits `FILE@REV`; a family's spec is left as written.
    """
    path_part, at, rev = spec.rpartition("@")
    if not at or (folder / spec).is_file():  # no revision, or a file whose name holds an '@'
        path_part, at, rev = spec, "", ""
    if Path(path_part).is_absolute() or not path_part.endswith((".yaml", ".yml")) or not (folder / path_part).is_file():
        return spec
    return shown(folder / path_part) + at + rev


def find(start: Path | None = None) -> Path | None:
    """The configuration file governing `start` (default: the current folder), or None."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / OWN_FILE
        if own.is_file():
            return own
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and has_table(pyproject):
            return pyproject
    return None


def has_table(pyproject: Path) -> bool:
    """Whether this pyproject.toml holds a [tool.harness] table (a broken one: whether it mentions one)."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A broken pyproject.toml that mentions the table is ours to report; one that does not is not ours to read.
        try:
            return "[tool.harness" in pyproject.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return isinstance(data.get("tool"), dict) and "harness" in data["tool"]


def load(start: Path | None = None) -> Config:
    """The configuration for `start` (default: the current folder); defaults when there is none."""
    path = find(start)
    if path is None:
        return Config(folder=(start or Path.cwd()).resolve())
    return read(path)


def current() -> Config:
    """The configuration for the current folder, read afresh: a file edited between two commands of one process counts."""
    return load()


def read(path: Path) -> Config:
    """One configuration file, validated whole; InputError (exit 2) with the file, line and key of what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the configuration: {getattr(exc, 'strerror', None) or exc}", path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r" \(at line (\d+), column \d+\)| \(at end of document\)", str(exc))
        line = int(found.group(1)) if found and found.group(1) else None
        if found and found.group(1) is None:
            line = text.count("\n") + (0 if text.endswith("\n") else 1)  # the last line: where the reader gave up
        message = str(exc)[:found.start()].rstrip() if found else str(exc)
        raise InputError(f"not valid TOML: {message}", path, line) from None
    prefix: tuple[str, ...] = ()
    if path.name != OWN_FILE:
        prefix = TABLE
        tool = data.get("tool")
        if not isinstance(tool, dict) or "harness" not in tool:
            raise InputError("has no [tool.harness] table", path)
        data = tool["harness"]
    return _Reader(path, text, prefix).config(data)


class _Reader:
    def __init__(self, path: Path, text: str, prefix: tuple[str, ...]):
        self.path, self.text, self.prefix = path, text, prefix

    def where(self, *keys: str) -> str:
        return ".".join((*self.prefix, *keys)) if (self.prefix or keys) else "(top level)"

    def error(self, message: str, table: tuple[str, ...], key: str | None) -> InputError:
        line = key_line(self.text, (*self.prefix, *table), key)
        shown = self.where(*table, *([key] if key else []))
        return InputError(f"{shown}: {message}", self.path, line)

    def config(self, data: Any) -> Config:
        if not isinstance(data, dict):
            raise self.error(f"expected a table, got {type(data).__name__}", (), None)
        for key in data:
            if key not in KEYS:
                err = unknown_key_error(key, KEYS, None, None, listing="known")
                raise self.error(err.message, (), key)
        values: dict[str, Any] = {}
        for key in ("scenarios", "targets"):
            if key in data:
                values[key] = self.strings(data[key], (), key, allow_empty=key == "targets")
        for key in ("report_dir", "explore_inbox", "imports_dir", "tools_dir"):
            if key in data:
                values[key] = self.string(data[key], (), key)
        if "workers" in data:
            values["workers"] = self.workers(data["workers"], (), "workers")
        if "suites" in data:
            values["suites"] = self.suites(data["suites"])
        return Config(path=self.path, folder=self.path.parent.resolve(), **values)

    def suites(self, value: Any) -> tuple[Suite, ...]:
        if not isinstance(value, dict):
            raise self.error(f"expected tables [{self.where('suites', 'NAME')}], got {type(value).__name__}", (), "suites")
        suites = []
        for name, table in value.items():
            if name == ALL_SUITES:
                raise self.error(f"`{ALL_SUITES}` is the name of every suite together; name this one otherwise",
                                 ("suites",), name)
            if not isinstance(table, dict):
                raise self.error(f"expected a table with scenarios and targets, got {type(table).__name__}", ("suites",), name)
            here = ("suites", name)
            for key in table:
                if key not in SUITE_KEYS:
                    err = unknown_key_error(key, SUITE_KEYS, None, None, listing="known")
                    raise self.error(err.message, here, key)
            for key in ("scenarios", "targets"):
                if key not in table:
                    raise self.error(f"missing `{key}`: a suite is scenario paths × targets", here, None)
            workers = self.workers(table["workers"], here, "workers") if "workers" in table else None
            suites.append(Suite(name, self.strings(table["scenarios"], here, "scenarios"),
                                self.strings(table["targets"], here, "targets"), workers))
        return tuple(suites)

    def strings(self, value: Any, table: tuple[str, ...], key: str, allow_empty: bool = False) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.error(f"expected a list of non-empty strings, got {value!r}", table, key)
        if not value and not allow_empty:
            raise self.error("expected at least one entry", table, key)
        return tuple(value)

    def string(self, value: Any, table: tuple[str, ...], key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"expected a non-empty string (a path), got {value!r}", table, key)
        return value

    def workers(self, value: Any, table: tuple[str, ...], key: str) -> int:
        if value == "auto":
            return os.cpu_count() or 1
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(f"expected a whole number of worker processes, at least 1, or \"auto\"; got {value!r}", table, key)
        return value
