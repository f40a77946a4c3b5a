"""An interactive step: the agent's terminal UI in a pseudo-terminal, answered, typed into and quit like a user would.

Some incidents happen only in an interactive session (a resume in the terminal
UI, a headless turn followed by an interactive one). Such a step (`interactive:
true`) starts the target's interactive command with a pty as its stdin, stdout
and controlling terminal, through the same warden, network namespace and
timeout as any step (harness/isolation/). A driver thread reads the pty onto a
Screen (screen.py) and, as the family declares in its TerminalUI:

1. answers each dialog a fresh HOME shows (onboarding, folder trust) when it is
   on screen, by its keys or by moving the pointer to the option it names;
2. types the prompt once the input prompt is ready, and submits it;
3. waits until the fake API's journal holds the step's main request(s), then
   until screen and journal have been quiet a moment (the UI idle);
4. quits with the family's keys, and waits for the process to exit.

The journal and the checks then follow as for a headless step. A UI that hangs
in any phase has its process group killed, and the step's error names the phase
and the screen's last line; the transcript (every answered dialog and a screen
at each phase) is kept beside the step's output, for a failure to be read.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import re
import select
import signal
import struct
import termios
import threading
import time
from pathlib import Path

from harness.execution.base import StepCall, StepSession
from harness.execution.screen import Screen
from harness.execution.terminal_ui import DOWN, ENTER, UP, Dialog, TerminalUI
from harness.isolation import netns
from harness.isolation.process import ProcessOutcome, run_process
from harness.isolation.terminal import strip_escapes
from harness.journal.exchange import MAIN
from harness.redaction import redact

_PASTE = ("\x1b[200~", "\x1b[201~")  # bracketed paste: a prompt's line breaks are text, not Enter
_READ_S = 0.05  # how long one read of the pty waits
_KEY_PAUSE_S = 0.3  # between keystrokes a UI must see apart (a command menu opens on "/exit" before its Enter)
_STILL_S = 0.5  # a dialog's screen unchanged this long: drawn whole, and taking keys
_ANSWER_S = 5.0  # how long an answered dialog may stay up before it is answered again


def run_in_terminal(call: StepCall, session: StepSession, ui: TerminalUI) -> tuple[netns.StepIsolation, ProcessOutcome]:
    """The step's process in a new pty, driven by `ui` from a thread while this one waits for it as for any step."""
    master, slave = os.openpty()
    terminal = os.ttyname(slave)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ui.rows, ui.columns, 0, 0))
    os.close(slave)  # the step opens it itself (its controlling terminal); the pty lives while the master is open
    driver = _Driver(call, session, ui, master)
    started = threading.Event()

    def on_start(pid: int) -> None:
        session.api.set_step_pid(pid)
        driver.pid = pid
        started.set()

    thread = threading.Thread(target=driver.drive, args=(started,), name=f"pty-{call.label}", daemon=True)
    thread.start()
    try:
        with netns.isolated_step(call.argv, session.server) as isolation:
            outcome = run_process(isolation.argv, call.env, call.cwd, call.timeout_s + ui.exit_s + 5,
                                  call.stdout_path, call.stderr_path, on_start=on_start,
                                  pass_fds=isolation.pass_fds, label=call.label, terminal=terminal,
                                  netns=isolation.netns)
    finally:
        driver.exited.set()
        started.set()
        thread.join(timeout=10)
        driver.close()
        os.close(master)
    if driver.error and not outcome.launch_error:
        outcome.launch_error = driver.error
    outcome.notes.extend(driver.notes)
    return isolation, outcome


class _Driver:
    """Reads the pty onto a screen and answers it, phase by phase; its error is the step's when it could not finish."""

    def __init__(self, call: StepCall, session: StepSession, ui: TerminalUI, master: int):
        self.call, self.session, self.ui, self.master = call, session, ui, master
        self.step = call.step
        self.screen = Screen(ui.rows, ui.columns)
        self.pid: int | None = None
        self.exited = threading.Event()
        self.error: str | None = None
        self.notes: list[str] = []
        self.deadline = time.monotonic() + call.timeout_s
        self.changed = time.monotonic()  # when the screen last changed
        self._raw = call.stdout_path.open("wb")  # every byte the UI wrote, escapes stripped at the end
        self._transcript: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span two reads

    # ------------------------------------------------------------------ phases

    def drive(self, started: threading.Event) -> None:
        started.wait()
        if self.pid is None:
            return  # never started: run_process says why
        try:
            self._start_up()
            self._type_prompt()
            self._await_turn()
            self._settle()
            self._quit()
        except _Hung as hung:
            self.error = str(hung)
            self._kill()
        except _Ended as ended:
            self.error = str(ended)
        except OSError as exc:  # the pty itself failed: the step cannot be trusted to have run as declared
            self.error = f"the terminal failed: {exc}"
            self._kill()
        finally:
            self._frame("the screen at the end")

    def _start_up(self) -> None:
        """Answer each dialog as it comes up, until the input prompt is ready."""
        answered: dict[str, int] = {}
        while True:
            text = self._read_until(lambda t: self._ready(t) or self._dialog(t) is not None,
                                    "the input prompt (or a dialog the family declares)")
            if self._ready(text) and self._dialog(text) is None:
                self._frame("the input prompt is ready")
                return
            dialog = self._dialog(text)
            answered[dialog.name] = answered.get(dialog.name, 0) + 1
            if answered[dialog.name] > 3:
                raise _Hung(self._where(f"the {dialog.name} dialog stayed up after being answered 3 times"))
            self._answer(dialog)

    def _answer(self, dialog: Dialog) -> None:
        """Once the dialog is drawn whole and still (a key sent while it is still mounting is lost), the keys; then
        the dialog gone, or a few seconds for the next try (it may take a moment to act on the answer)."""
        self._quiet(_STILL_S, f"the {dialog.name} dialog to be drawn")
        self._frame(f"dialog: {dialog.name}")
        if dialog.choose is not None:
            self._point_at(dialog)
        self._send(dialog.keys, f"answered {dialog.name} with {_shown(dialog.keys)}")
        self._read_until(lambda t: re.search(dialog.screen, t, re.MULTILINE) is None,
                         f"the {dialog.name} dialog to go once answered", within=_ANSWER_S)

    def _point_at(self, dialog: Dialog) -> None:
        """Arrow keys until the pointer's line is the option named; never more presses than the screen has lines."""
        for _ in range(self.ui.rows):
            lines = self.screen.lines()
            pointed = next((i for i, line in enumerate(lines) if self.ui.pointer in line), None)
            wanted = next((i for i, line in enumerate(lines) if re.search(dialog.choose, line)), None)
            if wanted is None:
                raise _Hung(self._where(f"the {dialog.name} dialog shows no option matching {dialog.choose!r}"))
            if pointed == wanted:
                return
            before = self.screen.text()
            key = DOWN if pointed is None or pointed < wanted else UP
            self._send(key, f"moved the pointer {'down' if key == DOWN else 'up'}")
            self._read_until(lambda t: t != before, f"the {dialog.name} dialog's pointer to move")
        raise _Hung(self._where(f"the pointer never reached {dialog.choose!r} in the {dialog.name} dialog"))

    def _type_prompt(self) -> None:
        """Typed once the input prompt is drawn and still (a REPL may draw it before it reads keys), submitted once
        the UI has echoed it."""
        self._quiet(_STILL_S, "the input prompt to be still")
        prompt = self.step.prompt or ""
        text = f"{_PASTE[0]}{prompt}{_PASTE[1]}" if "\n" in prompt else prompt
        before = self.screen.text()
        self._send(text, "typed the prompt")
        self._read_until(lambda t: t != before, "the typed prompt to show", within=_ANSWER_S)
        self._pause(_KEY_PAUSE_S)
        self._send(self.ui.submit, f"submitted it with {_shown(self.ui.submit)}")

    def _await_turn(self) -> None:
        """The step's main requests journaled: as many as it scripts replies (at least one)."""
        wanted = max(1, len(self.step.turns))
        self._read_until(lambda t: self._main_requests() >= wanted,
                         f"the turn's {wanted} main request(s) to the fake API" if wanted > 1 else
                         "the turn's main request to the fake API")
        self._frame("the turn was requested")

    def _settle(self) -> None:
        """The UI is idle once neither its screen nor the journal has changed for `settle_s`."""
        requests = len(self.session.journal.for_step(self.step.index))
        quiet_since = time.monotonic()
        while time.monotonic() - max(quiet_since, self.changed) < self.ui.settle_s:
            self._read(self.ui.settle_s / 5)
            now = len(self.session.journal.for_step(self.step.index))
            if now != requests:
                requests, quiet_since = now, time.monotonic()
            self._check_deadline("the UI to be idle after the turn")
        self._frame("the turn was answered and the UI idle")

    def _quit(self) -> None:
        for keys in self.ui.quit:
            self._send(keys, f"quit: {_shown(keys)}")
            self._pause(_KEY_PAUSE_S)
        self.deadline = min(self.deadline + self.ui.exit_s, time.monotonic() + self.ui.exit_s)
        while not self.exited.is_set():
            self._read(_READ_S)
            if time.monotonic() > self.deadline:
                raise _Hung(self._where(f"the UI did not exit within {self.ui.exit_s:g}s of "
                                        f"{' '.join(_shown(k) for k in self.ui.quit)}"))

    # ------------------------------------------------------------------ reading and writing

    def _quiet(self, seconds: float, waiting_for: str) -> None:
        """Until the screen has not changed for `seconds`."""
        while time.monotonic() - self.changed < seconds:
            self._check_deadline(waiting_for)
            if self.exited.is_set():
                raise _Ended(self._where(f"the terminal UI exited while the harness waited for {waiting_for}"))
            self._read(seconds / 3)

    def _read_until(self, done, waiting_for: str, within: float | None = None) -> str:
        """The screen's text once `done(text)`; `within` seconds: the text as it is then, done or not."""
        give_up = None if within is None else time.monotonic() + within
        while True:
            text = self.screen.text()
            if done(text):
                return text
            if self.exited.is_set():
                self._read(0)
                text = self.screen.text()
                if done(text):
                    return text
                raise _Ended(self._where(f"the terminal UI exited while the harness waited for {waiting_for}"))
            self._check_deadline(waiting_for)
            if give_up is not None and time.monotonic() > give_up:
                return text
            self._read(_READ_S)

    def _read(self, wait_s: float) -> None:
        """Whatever the UI wrote within `wait_s`, onto the screen; the UI blocks on a full pty if nobody reads."""
        end = time.monotonic() + wait_s
        while True:
            ready = select.select([self.master], [], [], max(0.0, end - time.monotonic()))[0]
            if not ready:
                return
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                self.exited.wait(_READ_S)
                return
            if not data:
                return
            self._raw.write(data)
            self.screen.feed(self._decoder.decode(data))
            self.changed = time.monotonic()
            end = min(end, time.monotonic() + 0.01)  # a burst of output: take it whole, then look

    def _pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._read(end - time.monotonic())

    def _send(self, keys: str, what: str) -> None:
        self._transcript.append(f">>> {what}")
        data = keys.encode()
        while data:
            data = data[os.write(self.master, data):]

    def _check_deadline(self, waiting_for: str) -> None:
        if time.monotonic() > self.deadline:
            raise _Hung(self._where(f"timed out after {self.call.timeout_s:g}s waiting for {waiting_for}"))

    def _ready(self, text: str) -> bool:
        return re.search(self.ui.ready, text, re.MULTILINE) is not None

    def _dialog(self, text: str) -> Dialog | None:
        return next((d for d in self.ui.dialogs if re.search(d.screen, text, re.MULTILINE)), None)

    def _main_requests(self) -> int:
        return sum(1 for e in self.session.journal.for_step(self.step.index) if e.klass == MAIN)

    def _where(self, what: str) -> str:
        last = self.screen.last_line()
        return f"interactive step: {what}; the screen's last line: {redact(last)[:200]!r}"

    def _frame(self, title: str) -> None:
        self._transcript.append(f"--- {title} ---\n{self.screen.text()}")

    def _kill(self) -> None:
        """The step's whole process group (its own session): nothing of a hung UI outlives the step."""
        if self.pid is None:
            return
        self.notes.append("the terminal UI was stopped by the harness: its process group was killed")
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            if self.exited.wait(2.0):
                return

    def close(self) -> None:
        """The output as a readable text (escapes stripped) and the transcript beside it, both redacted."""
        self._raw.close()
        raw = self.call.stdout_path.read_bytes().decode("utf-8", errors="replace")
        self.call.stdout_path.write_text(redact(strip_escapes(raw)), encoding="utf-8")
        self.call.stderr_path.write_text("", encoding="utf-8")
        transcript_path(self.call.stdout_path).write_text(redact("\n".join(self._transcript)) + "\n", encoding="utf-8")


def transcript_path(stdout_path: Path) -> Path:
    """`step-2.stdout` -> `step-2.terminal.txt`: the driver's account of the step, beside its output."""
    return stdout_path.with_name(stdout_path.name.rsplit(".", 1)[0] + ".terminal.txt")


def keep_transcript(stdout_path: Path, journal_path: Path | None) -> Path:
    """The transcript copied into the run folder, beside the journal (`terminals/RUN.step-2.txt`), which outlives the
    disposable workspace; where the run keeps no journal, the workspace's own copy."""
    made = transcript_path(stdout_path)
    if journal_path is None or not made.exists():
        return made
    kept = journal_path.parent / "terminals" / f"{journal_path.stem}.{made.name.replace('.terminal', '')}"
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(made.read_bytes())
    except OSError:
        return made
    return kept


def _shown(keys: str) -> str:
    names = {ENTER: "Enter", DOWN: "Down", UP: "Up", "\x04": "Ctrl-D", "\x03": "Ctrl-C", "\x1b": "Esc"}
    return names.get(keys, repr(keys))


class _Hung(Exception):
    """The UI did not get where the phase waits for in time."""


class _Ended(Exception):
    """The UI exited before the step's turn was done."""
