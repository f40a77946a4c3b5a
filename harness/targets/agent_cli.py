"""The scaffold every agent-CLI family shares, so a family module holds only what is its own.

Claude Code, Codex, Gemini CLI, Qwen Code and opencode are each one
installed version run under one launch policy (harness/targets/policy_family.py);
resolving a spec, listing the family and naming its install default are the
same for all five. A module gives its version pin, how to find the installed
CLI (`cli`) and how to run it under a policy (`build`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.targets.base import Target
from harness.targets.policy_family import PolicyFamily


def escaped(text: str) -> str:
    """Literal braces survive the runner's placeholder filling."""
    return text.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class AgentCLI(PolicyFamily):
    summary: str  # what `harness targets` says it is, e.g. "OpenAI's Codex CLI from npm"
    # version -> what `build` runs (argv prefix or binary), installed on first use; families pass a lambda that
    # looks their module's function up per call, so a test can put a fake install in its place
    cli: Callable[[str], Any]
    build: Callable[[str, str, Any], Target]  # (version, policy, cli) -> the target
    older: str | None = None  # a second version `harness install` installs, to compare with
    releases: tuple[str, str] | None = None  # (registry, package) its versions are releases of: `harness bisect` walks them

    @property
    def grammar(self) -> str:
        return f"'{self.name}[@VERSION][+POLICY]'"

    def matches(self, spec: str) -> bool:
        return spec == self.name or spec.startswith((f"{self.name}@", f"{self.name}+"))

    def targets(self, spec: str) -> list[Target]:
        version, policies = self.parse_spec(spec)
        cli = self.cli(version)
        return [self.build(version, policy, cli) for policy in policies]

    def listing(self) -> list[str]:
        return [f"{self.name}[@VERSION][+POLICY]  {self.summary}, installed on first use "
                f"(pinned: {self.pinned}; policies as claude-code's but replace-every-launch)"]

    def install_defaults(self) -> list[str]:
        return [f"{self.name}@{v}" for v in (self.pinned, self.older) if v is not None]
