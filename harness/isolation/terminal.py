"""Terminal control sequences out of an agent's captured output.

Agents that think they talk to a terminal (code-puppy sets colours and window
titles with OSC sequences even when stdout is a file) would otherwise put
escape bytes into session-id matching and into every report's stdout tail.
"""

from __future__ import annotations

import re

# OSC (ESC ] ... BEL or ESC \), CSI (ESC [ params final), and two-byte escapes.
_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)


def strip_escapes(text: str) -> str:
    return _ESCAPES.sub("", text)
