"""What a check may look at: the journal of one run, plus what the scenario and target declared."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from harness.fakeapi.exchange import COMPACTION, MAIN, Exchange


def main_requests(exchanges: Iterable[Exchange]) -> list[Exchange]:
    """The conversation's own turns, the only requests checks judge: main class, answered, parsed."""
    return [e for e in exchanges if e.klass == MAIN and e.status == 200 and e.normalized is not None]


@dataclass(frozen=True)
class CheckContext:
    exchanges: tuple[Exchange, ...]
    append: str | None
    identity_pattern: re.Pattern[str]

    @property
    def main_requests(self) -> list[Exchange]:
        return main_requests(self.exchanges)

    def compactions_between(self, after_seq: int, before_seq: int) -> list[Exchange]:
        return [
            e for e in self.exchanges
            if e.klass == COMPACTION and e.status == 200 and after_seq < e.seq < before_seq
        ]
