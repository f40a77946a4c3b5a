"""Request rules: how a target names its own requests (side calls, compactions) in the journal's terms.

They live with the journal, not the fake server: a target declares them, the
fake API applies them while it classifies, and nothing about them depends on
which transport carried the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.journal import conversation


@dataclass(frozen=True)
class RequestRule:
    """A request matches when every given pattern matches (searched, not anchored).

    Targets declare these to classify their own requests: background ones
    (titles, quota probes) as side calls, so checks judge only the
    conversation's own turns, and summarizer requests the fake API cannot
    recognize by itself as compactions.
    """

    model: str | None = None
    system: str | None = None
    prompt: str | None = None

    def matches(self, normalized: dict[str, Any]) -> bool:
        probes = {
            "model": normalized.get("model") or "",
            "system": conversation.system_text(normalized),
            "prompt": conversation.last_user_text(normalized),
        }
        given = {k: getattr(self, k) for k in probes if getattr(self, k) is not None}
        return bool(given) and all(re.search(p, probes[k]) for k, p in given.items())
