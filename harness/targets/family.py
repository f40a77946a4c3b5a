"""What a target family is to the rest of the harness, so one registry can list, install and resolve them all.

The CLI's `harness targets` listing, `harness install`'s defaults and the
unknown-target error were once written by hand beside the family modules;
each family now says these things about itself (harness/targets/registry.py
asks), and a family from another package is one more object of this shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

from harness.targets.base import Target


@runtime_checkable
class TargetFamily(Protocol):
    name: str  # the spec prefix, e.g. "codex"
    grammar: str  # its part of the unknown-target error, quoted: "'codex[@VERSION][+POLICY]'"

    def matches(self, spec: str) -> bool:
        """Whether a `--target` spec or an expectation name belongs to this family."""

    def targets(self, spec: str) -> list[Target]:
        """The targets one spec stands for (installing what they need)."""

    def name_problem(self, name: str) -> str | None:
        """Why an expectation naming this family could never apply (reports name targets in full), or None."""

    def listing(self) -> list[str]:
        """Its lines in `harness targets`."""

    def install_defaults(self) -> list[str]:
        """The specs `harness install` installs when given none."""


@dataclass(frozen=True)
class SpecFamily:
    """A family that is not an agent CLI under launch policies (harness/targets/agent_cli.py): its module's functions."""

    name: str
    grammar: str
    resolve: Callable[[str], list[Target]]
    problem: Callable[[str], "str | None"]
    lines: tuple[str, ...]
    defaults: tuple[str, ...] = ()
    separators: tuple[str, ...] = ("@", "+")  # what may follow the name in a spec
    bare: bool = True  # whether the name alone is a spec
    releases: tuple[str, str] | None = None  # (registry, package) its versions are releases of: `harness bisect` walks them

    def matches(self, spec: str) -> bool:
        return (self.bare and spec == self.name) or spec.startswith(tuple(self.name + s for s in self.separators))

    def targets(self, spec: str) -> list[Target]:
        return self.resolve(spec)

    def name_problem(self, name: str) -> str | None:
        return self.problem(name)

    def listing(self) -> list[str]:
        return list(self.lines)

    def install_defaults(self) -> list[str]:
        return list(self.defaults)


def option_lines(options: dict[str, str], defaults: tuple[str, ...], every: str) -> list[str]:
    """A family's `+OPTION` lines in `harness targets`, the defaults marked, and what `+*` stands for."""
    return [*(f"  +{option:<30} {text}{' (default)' if option in defaults else ''}" for option, text in options.items()),
            f"  +{'*':<30} {every}"]
