"""What a check may look at: the journal of one run, plus what the scenario and target declared."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping

from harness.journal.exchange import COMPACTION, MAIN, Exchange
from harness.journal.launches import Launch

from harness.scenario.model import texts_until

if TYPE_CHECKING:
    from harness.scenario.model import Scenario


def main_requests(exchanges: Iterable[Exchange]) -> list[Exchange]:
    """The conversation's own turns, the only requests checks judge: main class, answered, parsed."""
    return [e for e in exchanges if e.klass == MAIN and e.status == 200 and e.normalized is not None]


@dataclass(frozen=True)
class CheckContext:
    exchanges: tuple[Exchange, ...]
    append: str | None
    identity_pattern: re.Pattern[str]
    temporary: tuple[str, ...] = ()  # texts every run may carry, outside the prefix and the history only
    step_temporary: Mapping[int, str] = field(default_factory=dict)  # step -> text given to that step only
    prefix_changes: Mapping[int, str] = field(default_factory=dict)  # step -> why the prefix is meant to change there
    min_cache_reuse: float | None = None
    launches: tuple[Launch, ...] = ()  # the launch journal: what the launcher passed to the agent binary
    prompt_flags: tuple[str, ...] = ()  # the target's options whose value is system-prompt text
    step_appends: Mapping[int, str] = field(default_factory=dict)  # step -> the caller's text from then on, changed
    # path -> ((step, text), ...): the files the agent reads as instructions, as each step's edit left them
    instruction_files: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, scenario: "Scenario", exchanges: Iterable[Exchange], identity_pattern: re.Pattern[str],
           launches: Iterable[Launch] = (), prompt_flags: Iterable[str] = ()) -> "CheckContext":
        """Everything a scenario declares that a check may judge against."""
        return cls(
            tuple(exchanges), scenario.append, identity_pattern,
            temporary=scenario.temporary, step_temporary=scenario.step_temporary,
            prefix_changes=scenario.prefix_changes, min_cache_reuse=scenario.min_cache_reuse,
            launches=tuple(launches), prompt_flags=tuple(prompt_flags), step_appends=scenario.step_appends,
            instruction_files={path: scenario.file_versions(path) for path in scenario.instruction_files},
        )

    def append_at(self, step: int | None) -> str | None:
        """The caller's text a step's launch was given: the last change at or before it, else `append`."""
        return texts_until(self.append, self.step_appends, step)[-1]

    def replaced_at(self, step: int | None) -> list[str]:
        """The caller's earlier texts, replaced by the step's: none of them may reach its requests."""
        *earlier, current = texts_until(self.append, self.step_appends, step)
        return [text.strip() for text in dict.fromkeys(earlier) if text and text.strip() and text != current]

    @property
    def main_requests(self) -> list[Exchange]:
        return main_requests(self.exchanges)

    def compactions_between(self, after_seq: int, before_seq: int) -> list[Exchange]:
        return [
            e for e in self.exchanges
            if e.klass == COMPACTION and e.status == 200 and after_seq < e.seq < before_seq
        ]
