"""The grammar every agent-CLI family shares: `NAME[@VERSION][+POLICY|+*]`, named in full in reports.

Claude Code, Codex, Gemini CLI, Qwen Code and opencode are each judged under
the same launch policies (the caller's text on the first launch only, on
every launch, or never), so a launcher author reads one table across them;
this module is the one place that parses such a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.errors import InputError
from harness.targets.installs import VERSION_RE

FIRST_LAUNCH_ONLY = "append-first-launch-only"
EVERY_LAUNCH = "append-every-launch"
NEVER = "append-never"
POLICIES = {
    FIRST_LAUNCH_ONLY: "the caller's text on the session's first launch only (the first seed's bug)",
    EVERY_LAUNCH: "the caller's text on every launch, resumes and /compact included (the seed's fix)",
    NEVER: "never passes the caller's text",
}
DEFAULT_POLICY = EVERY_LAUNCH
EVERY_POLICY = "*"


def passes_text(policy: str, first: bool) -> bool:
    """Whether a launch under this policy carries the caller's text (`first`: the session's first launch)."""
    return policy == EVERY_LAUNCH or (policy == FIRST_LAUNCH_ONLY and first)


@dataclass(frozen=True)
class PolicyFamily:
    name: str  # the spec prefix, e.g. "codex"
    pinned: str  # the version a bare name means
    # A family's own policies beyond the shared three (Claude Code's `replace-every-launch`): named explicitly only,
    # never part of `+*`, so the expectations written for `+*` keep their meaning.
    extra_policies: ClassVar[dict[str, str]] = {}

    def parse_spec(self, spec: str) -> tuple[str, list[str]]:
        """The version and the policies a spec names, defaults filled in; nothing is installed."""
        rest, plus, policy = spec[len(self.name):].partition("+")
        if not plus:
            policy = DEFAULT_POLICY
        version = self.pinned
        if rest:
            if not rest.startswith("@") or not VERSION_RE.fullmatch(rest[1:]):
                raise InputError(f"bad target {spec!r}: expected {self.name}[@X.Y.Z][+POLICY] "
                                 f"(e.g. {self.name}@{self.pinned}+{EVERY_LAUNCH})")
            version = rest[1:]
        if policy == EVERY_POLICY:
            return version, list(POLICIES)
        if policy in POLICIES or policy in self.extra_policies:
            return version, [policy]
        known = ", ".join([*POLICIES, *self.extra_policies])
        every = f"the first {len(POLICIES)}" if self.extra_policies else "all"
        raise InputError(f"unknown launch policy {policy!r} in target {spec!r} (known: {known}, or * for {every})")

    def name_problem(self, name: str) -> str | None:
        """Why no target of this family can carry this name (reports always name version and policy), or None."""
        if "@" not in name or "+" not in name:
            return (f"target {name!r}: a {self.name} target is always named {self.name}@VERSION+POLICY "
                    f"(e.g. {self.name}@{self.pinned}+{EVERY_LAUNCH})")
        try:
            self.parse_spec(name)
        except InputError as exc:
            return str(exc)
        return None
