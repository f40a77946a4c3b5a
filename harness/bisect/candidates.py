"""What a `harness bisect` range stands for: the releases or revisions between two ends, in the order to search.

`NAME@OLD..NEW[+OPTIONS]` is a family's releases as its registry lists them
(the family says which registry and package: `releases` on the family), in
version order, pre-releases and yanked releases between the ends left out and
named. Version order is not publication order: a release uploaded after a
higher version may be a backport to an older line, or only the registry's
record of when it took the file (a mirror's, here: it dates 2.0.3 of Claude
Code eleven months after 2.0.5). The two cannot be told apart from the
registry's answer, and leaving a release out on a wrong date could put the
boundary on its neighbour, so such releases stay in version order and are
named as published out of order; the answer says so when the boundary
touches one. `FILE@REV1..REV2` is a target file's revisions, first-parent,
oldest first, as `git bisect run` walks them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import InputError
from harness.targets.checkout import CheckoutError, git, resolve_revision
from harness.targets.registry import families
from harness.targets.release_index import Release, releases

_PYPI_PRE = re.compile(r"(?i)(a|alpha|b|beta|c|rc|pre|preview|dev)\d*")


@dataclass(frozen=True)
class Candidate:
    label: str  # the release's version or the revision's short sha, as reports name it
    spec: str  # the `--target` spec that runs it
    uploaded: str | None = None  # a release's upload time (UTC, ISO 8601)
    subject: str | None = None  # a revision's commit subject

    def __str__(self) -> str:  # how the search's messages name it
        return self.label


@dataclass
class Range:
    kind: str  # "release" or "revision"
    source: str  # "npm @anthropic-ai/claude-code", "git /path/to/repo"
    candidates: list[Candidate]
    left_out: list[dict] = field(default_factory=list)  # {"version", "why"}: named, never searched
    out_of_order: list[dict] = field(default_factory=list)  # searched, and named: uploaded after a higher release


def parse(spec: str) -> Range:
    """The candidates of a range spec; every problem is one InputError naming the spec."""
    at = spec.find("@")
    dots = spec.find("..", at + 1) if at > 0 else -1
    if at <= 0 or dots < 0:
        raise InputError(f"bad bisect range {spec!r}: expected NAME@OLD..NEW[+OPTIONS] (releases) or "
                         "FILE@REV1..REV2 (revisions of a target file)")
    name, old = spec[:at], spec[at + 1:dots]
    if name.endswith((".yaml", ".yml")):
        return _revisions(Path(name), old, spec[dots + 2:], spec)
    new, plus, options = spec[dots + 2:].partition("+")
    return _releases(name, old, new, plus + options, spec)


def _releases(name: str, old: str, new: str, options: str, spec: str) -> Range:
    family = next((f for f in families() if f.name == name), None)
    if family is None:
        raise InputError(f"bad bisect range {spec!r}: no target family is named {name!r} (`harness targets` lists them)")
    source = getattr(family, "releases", None)
    if source is None:
        raise InputError(f"bad bisect range {spec!r}: {name} targets are not releases of a registry package, so "
                         "there are no releases to bisect; bisect a target file's revisions instead (FILE@REV1..REV2)")
    if not old or not new:
        raise InputError(f"bad bisect range {spec!r}: name both ends, OLD..NEW")
    registry, package = source
    listed = releases(registry, package)
    versions = [r.version for r in listed]
    for end in (old, new):
        if end not in versions:
            raise InputError(f"bad bisect range {spec!r}: {registry} lists no release {end} of {package}")
    start, stop = versions.index(old), versions.index(new)
    if start >= stop:
        raise InputError(f"bad bisect range {spec!r}: {old} does not come before {new} in version order")
    inside = listed[start:stop + 1]
    kept, left_out = _finals(inside, registry)
    return Range("release", f"{registry} {package}",
                 [Candidate(r.version, f"{name}@{r.version}{options}", r.uploaded.isoformat()) for r in kept], left_out,
                 out_of_order(kept))


def _finals(inside: list[Release], registry: str) -> tuple[list[Release], list[dict]]:
    """The ends and the final, installable releases between them; the others named with why."""
    ends = (inside[0], inside[-1])
    kept, left_out = [], []
    for release in inside:
        if release not in ends and _prerelease(release.version, registry):
            left_out.append({"version": release.version, "why": "a pre-release"})
        elif release not in ends and release.yanked:
            left_out.append({"version": release.version, "why": "yanked"})
        else:
            kept.append(release)
    return kept, left_out


def out_of_order(kept: list[Release]) -> list[dict]:
    """Each release uploaded after a higher one of the range, with the nearest such higher release."""
    found = []
    for index, release in enumerate(kept):
        later = next((r for r in kept[index + 1:] if r.uploaded < release.uploaded), None)
        if later is not None:
            found.append({"version": release.version, "uploaded": release.uploaded.isoformat(),
                          "after": later.version, "after_uploaded": later.uploaded.isoformat()})
    return found


def _prerelease(version: str, registry: str) -> bool:
    return "-" in version if registry == "npm" else bool(_PYPI_PRE.search(version))


def _revisions(path: Path, old: str, new: str, spec: str) -> Range:
    from harness.targets.target_file import revision_repository

    if not path.is_file():
        raise InputError(f"bad bisect range {spec!r}: no target file {path}")
    try:
        repository = revision_repository(path)
        first, last = resolve_revision(repository, old), resolve_revision(repository, new)
        done = git(repository.toplevel, "rev-list", "--first-parent", "--reverse", "--format=%h %s",
                   f"{first}..{last}", key="rev")
        if done.returncode != 0:
            raise InputError(f"bad bisect range {spec!r}: git rev-list failed: {done.stderr.strip()}")
        is_ancestor = git(repository.toplevel, "merge-base", "--is-ancestor", first, last, key="rev").returncode == 0
        subject = git(repository.toplevel, "log", "-1", "--format=%h %s", first, key="rev").stdout.strip()
    except CheckoutError as exc:
        raise InputError(f"bad bisect range {spec!r}: {exc.message}") from None
    if not is_ancestor:
        raise InputError(f"bad bisect range {spec!r}: {old} is not an ancestor of {new}")
    lines = [line for line in done.stdout.splitlines() if not line.startswith("commit ")]
    commits = [subject, *lines]
    candidates = []
    for line in commits:
        short, _, text = line.partition(" ")
        candidates.append(Candidate(short, f"{path}@{short}", subject=text))
    if len(candidates) < 2:
        raise InputError(f"bad bisect range {spec!r}: {old} and {new} are the same commit")
    return Range("revision", f"git {repository.toplevel}", candidates)
