"""Every output of a command is a reporter behind one interface, chosen with `--reporter` as pytest and Playwright choose theirs.

A reporter has a name, the files it writes in the report folder (checked
before any agent runs, report/folder.py) and `write(results, folder,
context)`, which returns the paths it wrote. The fan-out calls the chosen
ones in the command's own order, whatever order they were named in, so the
console, which says where the reports went, always speaks last and the files
are listed as they always were. A write that fails raises ReportWriteError
(report/files.py) and the reporters after it do not run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Generic, Protocol, Sequence, TypeVar

from harness.errors import InputError
from harness.report.folder import JOURNAL_DIR

Results = TypeVar("Results")
Results_contra = TypeVar("Results_contra", contravariant=True)


@dataclass(frozen=True)
class ReportContext:
    command: tuple[str, ...]  # the command line, as the reports quote it
    notes: tuple[str, ...] = ()  # what a reader of any one report must know about the whole command
    written: tuple[Path, ...] = ()  # what the reporters before this one wrote


class Reporter(Protocol[Results_contra]):
    @property
    def name(self) -> str: ...

    @property
    def files(self) -> tuple[str, ...]: ...

    def write(self, results: Results_contra, folder: Path, context: ReportContext) -> list[Path]: ...


@dataclass(frozen=True)
class FileReporter(Generic[Results]):
    """A reporter that writes one file of the report folder."""

    name: str
    file: str
    write_file: Callable[[Results, Path, ReportContext], Path]

    @property
    def files(self) -> tuple[str, ...]:
        return (self.file,)

    def write(self, results: Results, folder: Path, context: ReportContext) -> list[Path]:
        return [self.write_file(results, folder / self.file, context)]


@dataclass(frozen=True)
class ConsoleReporter(Generic[Results]):
    """The terminal's last word: the sections (the verdict table, then the evidence), then where the reports are."""

    sections: Callable[[Results], Sequence[str]]
    name: str = "console"
    files: tuple[str, ...] = ()

    def write(self, results: Results, folder: Path, context: ReportContext) -> list[Path]:
        table, *rest = self.sections(results)
        out = [table]
        out += [f"\n{section}" for section in rest if section]
        places = [*map(str, context.written), f"{folder / JOURNAL_DIR}/"]
        out.append("\nreports: " + ", ".join(places))
        print("\n".join(out))
        return []


def add_option(parser, reporters: Sequence[Reporter]) -> None:
    """`--reporter NAME[,NAME...]`, repeatable; the help names the command's reporters and their files."""
    listed = ", ".join(f"{r.name} ({', '.join(r.files)})" if r.files else r.name for r in reporters)
    parser.add_argument("--reporter", action="append", default=[], metavar="NAME[,NAME...]",
                        help=f"write only these reports; repeatable or comma-separated (default: all of {listed})")


def reporter_names(values: Sequence[str]) -> list[str]:
    """`--reporter json,junit --reporter markdown`: the names, in the order given."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def choose(values: Sequence[str], available: Sequence[Reporter], command: str) -> list[Reporter]:
    """The reporters named (every one when none is), in the command's order; InputError (exit 2) for an unknown name."""
    names = reporter_names(values)
    if not names:
        return list(available)
    known = [r.name for r in available]
    unknown = next((n for n in names if n not in known), None)
    if unknown is not None:
        raise InputError(f"--reporter {unknown!r}: `harness {command}` has no such reporter; choose from {', '.join(known)}")
    return [r for r in available if r.name in names]


def files_of(reporters: Sequence[Reporter]) -> tuple[str, ...]:
    return tuple(name for reporter in reporters for name in reporter.files)


def fan_out(reporters: Sequence[Reporter[Results]], results: Results, folder: Path, context: ReportContext) -> list[Path]:
    """Each chosen reporter in turn, each told what the ones before it wrote; the paths written, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for reporter in reporters:
        written += reporter.write(results, folder, replace(context, written=tuple(written)))
    return written
