"""What a family declares of its terminal UI: the dialogs a fresh HOME shows, how to know it is ready, how to quit.

The declaration is the family's (harness/targets/), measured by running its
CLI in a pty; carrying it out is pty.py's. It is data only, so a Target that
holds it stays picklable for the pool's workers.
"""

from __future__ import annotations

from dataclasses import dataclass

DOWN, UP, ENTER = "\x1b[B", "\x1b[A", "\r"


@dataclass(frozen=True)
class Dialog:
    """A question the UI asks before it takes a prompt, and how the harness answers it."""

    name: str  # what the transcript and errors call it ("folder trust")
    screen: str  # a regex over the screen's text: the dialog is up
    keys: str = ENTER  # what answers it (Enter takes the option the pointer is on)
    choose: str | None = None  # a regex of the option to take: the arrow keys move the pointer there before `keys`


@dataclass(frozen=True)
class TerminalUI:
    """How a family's terminal UI is driven; the family declares it (harness/targets/), this module carries it out."""

    ready: str  # a regex over the screen: the input prompt waits for text
    dialogs: tuple[Dialog, ...] = ()
    quit: tuple[str, ...] = ("/exit", ENTER)  # keystrokes, sent one after another
    submit: str = ENTER
    pointer: str = "❯"  # what marks the highlighted option of a dialog's list
    settle_s: float = 1.5  # screen and journal quiet this long after the turn: the UI is idle
    exit_s: float = 20.0  # how long the UI may take to exit once told to quit
    rows: int = 40
    columns: int = 120
