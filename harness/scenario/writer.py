"""Scenario documents (plain dicts in the scenario file's grammar) written back as YAML people read.

`harness explore` writes what it found and `harness minimize` what it kept; both
write the top-level keys in block style and each step on one line in flow
style, as the library's hand-written scenarios are, so a written file diffs
and reviews like one of them. Whatever is written is read back by the caller
before it is trusted (harness/scenario/reader.py).
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

FLOW_KEYS = ("checks",)  # short lists, on one line


def render(doc: dict[str, Any], comment: str = "") -> str:
    """YAML for a scenario document: `comment` as leading # lines, then the keys in the document's order."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    for key, value in doc.items():
        if key == "steps":
            lines.append("steps:")
            lines += ["  - " + _flow_entry(step) for step in value]
        elif key == "expect" and isinstance(value, dict):
            lines.append("expect:")
            lines += [f"  {_scalar(name)}: {_flow(verdicts)}" for name, verdicts in value.items()]
        elif key == "description" and _foldable(value):
            lines.append("description: >-")
            lines += textwrap.wrap(value, 100, initial_indent="  ", subsequent_indent="  ",
                                   break_long_words=False, break_on_hyphens=False)
        elif key in FLOW_KEYS:
            lines.append(f"{key}: {_flow(value)}")
        else:
            lines.append(_block({key: value}).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _foldable(text: Any) -> bool:
    """Prose a folded block (`>-`) gives back unchanged: one paragraph, single spaces, no edge blanks."""
    return isinstance(text, str) and text == " ".join(text.split()) and bool(text)


def _flow_entry(step: dict[str, Any]) -> str:
    (kind, body), = step.items()
    return f"{kind}: {_flow(body)}"


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10_000).strip()


def _scalar(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True).strip().removesuffix("\n...").strip()


def _block(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=False, allow_unicode=True, width=100)
