"""A scenario's `incident:` section: where a field incident was reported, on which releases, and what the bytes show.

The catalog (`incidents/`) keeps each public incident as a scenario that
reproduces it, so "does this still happen?" is a run, not a search through a
tracker. The metadata is read as strictly as the steps: a report that names no
source or no affected release is not an incident anyone can re-check. Its
`targets` are the runs that judge the report (its affected release, and the
fixed one where there is one): `harness run incidents/` runs each entry on its
own targets unless `--target` says otherwise, like any library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.documents.located import LocatedDict, child_path, describe, item_path
from harness.documents.reader import Reader

SOURCE_KINDS = ("issue", "pull")  # a tracker's issue, or a pull request (its description or its review)
# reproduced: the bytes show what the report says; differs: they show something else, recorded as the finding
OUTCOMES = ("reproduced", "differs")
_REPOSITORY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_KEYS = ("source", "affected", "fixed", "targets", "outcome", "bytes_show", "seed")
_SOURCE_KEYS = ("repository", *SOURCE_KINDS, "title", "link")


@dataclass(frozen=True)
class IncidentSource:
    repository: str  # owner/name
    kind: str  # one of SOURCE_KINDS
    number: int
    title: str
    link: str

    @property
    def reference(self) -> str:
        return f"{self.repository}#{self.number}"


@dataclass(frozen=True)
class Incident:
    source: IncidentSource
    affected: tuple[str, ...]  # the releases the report names as affected (package@version)
    fixed: str | None  # the release said to fix it; None where nothing is fixed yet
    targets: tuple[str, ...]  # target specs the entry runs on by default: the affected release, then the fixed one
    outcome: str  # one of OUTCOMES
    bytes_show: str  # what the journals of those runs show, in words
    seed: str | None = None  # the seed report it came from (../shared/seeds/), for the three the project began with


class IncidentReader:
    """Reads `incident:`; errors name the file, line and key path like the rest of a scenario."""

    def __init__(self, file: Reader):
        self.file = file

    def incident(self, doc: LocatedDict) -> Incident | None:
        if "incident" not in doc:
            return None
        m = self.file.mapping(doc["incident"], doc.key_line("incident"), "incident")
        self.file.known_keys(m, _KEYS, "incident")
        source = self.source(m)
        outcome = self.file.string(self.file.require(m, "outcome", "incident"), m.key_line("outcome"),
                                   "incident.outcome", non_empty=True)
        if outcome not in OUTCOMES:
            raise self.file.error(f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}", m.key_line("outcome"),
                                  "incident.outcome")
        fixed = None
        if m.get("fixed") is not None:
            fixed = self.file.string(m["fixed"], m.key_line("fixed"), "incident.fixed", non_empty=True)
        return Incident(
            source=source,
            affected=self.strings(m, "affected"),
            fixed=fixed,
            targets=self.strings(m, "targets"),
            outcome=outcome,
            bytes_show=self.file.string(self.file.require(m, "bytes_show", "incident"), m.key_line("bytes_show"),
                                        "incident.bytes_show", non_empty=True).strip(),
            seed=self.file.optional_string(m, "seed", "incident", non_empty=True),
        )

    def source(self, m: LocatedDict) -> IncidentSource:
        where = "incident.source"
        s = self.file.mapping(self.file.require(m, "source", "incident"), m.key_line("source"), where)
        self.file.known_keys(s, _SOURCE_KEYS, where)
        repository = self.file.string(self.file.require(s, "repository", where), s.key_line("repository"),
                                      child_path(where, "repository"), non_empty=True)
        if not _REPOSITORY_RE.fullmatch(repository):
            raise self.file.error(f"expected owner/name, got {repository!r}", s.key_line("repository"),
                                  child_path(where, "repository"))
        kinds = [k for k in SOURCE_KINDS if k in s]
        if len(kinds) != 1:
            raise self.file.error(f"expected exactly one of {' or '.join(SOURCE_KINDS)} (its number), got "
                                  f"{len(kinds)}", s.line, where)
        kind = kinds[0]
        number = s[kind]
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise self.file.error(f"expected a positive {kind} number, got {describe(number)}", s.key_line(kind),
                                  child_path(where, kind))
        link = self.file.string(self.file.require(s, "link", where), s.key_line("link"), child_path(where, "link"),
                                non_empty=True)
        if not link.startswith("https://"):
            raise self.file.error(f"expected an https:// link to the {kind}, got {link!r}", s.key_line("link"),
                                  child_path(where, "link"))
        title = self.file.string(self.file.require(s, "title", where), s.key_line("title"), child_path(where, "title"),
                                 non_empty=True)
        return IncidentSource(repository, kind, number, title, link)

    def strings(self, m: LocatedDict, key: str) -> tuple[str, ...]:
        where = f"incident.{key}"
        value = self.file.require(m, key, "incident")
        if isinstance(value, str):
            return (self.file.string(value, m.key_line(key), where, non_empty=True),)
        items = self.file.list_(value, m.key_line(key), where, "a non-empty list of releases or target specs")
        return tuple(self.file.string(item, items.item_line(i), item_path(where, i), non_empty=True)
                     for i, item in enumerate(items))
