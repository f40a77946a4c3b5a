"""The CLI run on a document, in this process or as the installed `harness`, and the promise its outcome keeps.

The promise (README, issue 18): whatever the document, the exit status is 0, 1
or 2; no Python traceback is ever printed; and exit 2 is exactly one line,
`harness: error: ...`, naming the file that is wrong.
"""

from __future__ import annotations

import contextlib
import io
import re
import resource
import signal
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from harness import cli

HARNESS = Path(sys.executable).with_name("harness")  # the console script of the project's virtualenv
TRACEBACK = "Traceback (most recent call last)"
# What would break the one line, on a terminal or for a reader of the log: a line break (Python's, YAML's) or a
# raw control character, which a message shows escaped, as repr() does.
_BREAKS_THE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    raised: str = ""  # the traceback of an exception main() let out (in-process runs)

    def describe(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}\n{self.raised}"


def run_in_process(argv: list[str]) -> Outcome:
    """cli.main(argv) with stdout and stderr captured; the signal handlers main() installs are put back."""
    handlers = {stop: signal.getsignal(stop) for stop in (signal.SIGINT, signal.SIGTERM)}
    out, err = io.StringIO(), io.StringIO()
    code, raised = None, ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        code = stop.code if isinstance(stop.code, int) else 2
    except BaseException:  # noqa: BLE001 - the property is that nothing escapes; report what did
        raised = traceback.format_exc()
    finally:
        for stop, handler in handlers.items():
            signal.signal(stop, handler)
    return Outcome(code, out.getvalue(), err.getvalue(), raised)


def run_installed(argv: list[str], cwd: Path, memory_bytes: int | None = None, timeout_s: float = 300) -> Outcome:
    """The virtualenv's `harness` as a user runs it; `memory_bytes` caps its address space (RLIMIT_AS)."""

    def cap_memory() -> None:
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    done = subprocess.run([str(HARNESS), *argv], cwd=cwd, capture_output=True, text=True, errors="replace",
                          timeout=timeout_s, preexec_fn=cap_memory)
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_kept_promise(outcome: Outcome, blamed: Path | list[Path]) -> None:
    """0, 1 or 2; no traceback; exit 2 is one `harness: error:` line naming one of the ``blamed`` files.

    One line: no line break and no raw control character in it (the message shows them escaped).
    """
    context = outcome.describe()
    assert not outcome.raised, context
    assert TRACEBACK not in outcome.stdout + outcome.stderr, context
    assert outcome.code in (0, 1, 2), context
    if outcome.code == 2:
        line = outcome.stderr.strip()
        assert not _BREAKS_THE_LINE.search(line), context
        assert line.startswith("harness: error: "), context
        files = [blamed] if isinstance(blamed, Path) else blamed
        assert any(str(file) in line for file in files), context


def assert_input_error(outcome: Outcome, file: Path, *fragments: str) -> str:
    """Exit 2 with the one line, naming ``file``; returns the line."""
    assert_kept_promise(outcome, file)
    assert outcome.code == 2, outcome.describe()
    line = outcome.stderr.strip()
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line
