"""What a terminal UI shows: the bytes it wrote, replayed onto a grid of cells as a terminal would.

A TUI does not write lines: Ink (Claude Code) places words with cursor
columns (`ESC [ 12 G`) instead of spaces and redraws its frame in place,
prompt_toolkit (code-puppy) moves the cursor up and erases. Stripping the
escapes leaves "WelcometoClaudeCode" and every frame concatenated, which a
dialog's pattern cannot match reliably. This small screen keeps what the
pty's user would see now: the pty driver (harness/execution/pty.py) matches
dialogs and the input prompt against it, and a hung UI is reported by its
last line. It is a reader, not a terminal: modes, colours, scroll regions and
alternate screens are ignored (the alternate screen is drawn on the one grid).
"""

from __future__ import annotations

import re

# CSI with its parameters and final byte; OSC up to BEL or ST; charset designations and other two-byte escapes.
_SEQUENCE = re.compile(
    r"\x1b\[(?P<csi>[0-?]*)[ -/]*(?P<final>[@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[()*+][0-~]"
    r"|\x1b[@-Z\\-_0-9=>]"
)


class Screen:
    """A grid of `rows` × `columns` characters and a cursor, fed the UI's output as text."""

    def __init__(self, rows: int = 40, columns: int = 120):
        self.rows, self.columns = rows, columns
        self.grid = [[" "] * columns for _ in range(rows)]
        self.row = self.column = 0
        self._saved = (0, 0)
        self._pending = ""  # an escape sequence cut between two reads

    def feed(self, text: str) -> None:
        text, self._pending = self._pending + text, ""
        position = 0
        while position < len(text):
            escape = text.find("\x1b", position)
            plain = text[position:] if escape < 0 else text[position:escape]
            self._write(plain)
            if escape < 0:
                return
            match = _SEQUENCE.match(text, escape)
            if match is None:
                if len(text) - escape < 64:  # incomplete: wait for the rest
                    self._pending = text[escape:]
                    return
                position = escape + 1  # not a sequence this screen knows: drop the ESC
                continue
            if match.group("final"):
                self._csi(match.group("csi"), match.group("final"))
            elif match.group(0) == "\x1b7":
                self._saved = (self.row, self.column)
            elif match.group(0) == "\x1b8":
                self.row, self.column = self._saved
            position = match.end()

    def lines(self) -> list[str]:
        """The screen's rows, right-stripped; the empty ones kept, so positions read as on screen."""
        return ["".join(row).rstrip() for row in self.grid]

    def text(self) -> str:
        """The screen as text, one row per line, with the trailing blank rows left out."""
        lines = self.lines()
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)

    def last_line(self) -> str:
        """The lowest row with something on it (what a hung UI was showing last)."""
        return next((line.strip() for line in reversed(self.lines()) if line.strip()), "")

    # ------------------------------------------------------------------ writing

    def _write(self, text: str) -> None:
        for char in text:
            if char == "\n":
                self._line_feed()
            elif char == "\r":
                self.column = 0
            elif char == "\b":
                self.column = max(0, self.column - 1)
            elif char == "\t":
                self.column = min(self.columns - 1, (self.column // 8 + 1) * 8)
            elif char < " " or char == "\x7f":
                continue  # BEL, SI, SO and the other controls draw nothing
            else:
                if self.column >= self.columns:
                    self.column = 0
                    self._line_feed()
                self.grid[self.row][self.column] = char
                self.column += 1

    def _line_feed(self) -> None:
        if self.row == self.rows - 1:
            self.grid.pop(0)
            self.grid.append([" "] * self.columns)
        else:
            self.row += 1

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?") or params.startswith(">"):
            return  # private modes (cursor visibility, bracketed paste, the alternate screen): nothing drawn
        numbers = [int(part) if part.isdigit() else 0 for part in params.split(";")] if params else []
        first = numbers[0] if numbers else 0
        count = max(1, first)
        if final == "A":
            self.row = max(0, self.row - count)
        elif final in "BE":
            self.row = min(self.rows - 1, self.row + count)
            self.column = 0 if final == "E" else self.column
        elif final == "C":
            self.column = min(self.columns - 1, self.column + count)
        elif final == "D":
            self.column = max(0, self.column - count)
        elif final == "F":
            self.row, self.column = max(0, self.row - count), 0
        elif final == "G":
            self.column = min(self.columns - 1, count - 1)
        elif final in "Hf":
            row = numbers[0] if numbers else 1
            column = numbers[1] if len(numbers) > 1 else 1
            self.row = min(self.rows - 1, max(1, row) - 1)
            self.column = min(self.columns - 1, max(1, column) - 1)
        elif final == "d":
            self.row = min(self.rows - 1, count - 1)
        elif final == "J":
            self._erase_display(first)
        elif final == "K":
            self._erase_line(first)
        elif final == "X":
            end = min(self.columns, self.column + count)
            self.grid[self.row][self.column:end] = [" "] * (end - self.column)

    def _erase_line(self, how: int) -> None:
        row = self.grid[self.row]
        if how == 0:
            row[self.column:] = [" "] * (self.columns - self.column)
        elif how == 1:
            row[: self.column + 1] = [" "] * (self.column + 1)
        else:
            row[:] = [" "] * self.columns

    def _erase_display(self, how: int) -> None:
        if how == 0:
            self._erase_line(0)
            for row in range(self.row + 1, self.rows):
                self.grid[row] = [" "] * self.columns
        elif how == 1:
            self._erase_line(1)
            for row in range(self.row):
                self.grid[row] = [" "] * self.columns
        else:
            self.grid = [[" "] * self.columns for _ in range(self.rows)]
