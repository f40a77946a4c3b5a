"""`harness serve`: the fake model API in the foreground, for pointing an agent at by hand.

`--record DIR` keeps what an incident sent (DIR/journal.jsonl) and what the
recording was (DIR/session.json: base URL, start and end, request count), so
`harness import DIR/journal.jsonl` can turn it into a scenario. Ctrl-C and
SIGTERM stop it the same way: the recording is finalised either way.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import signal
import sys
from pathlib import Path
from typing import Iterator

from harness.errors import InputError

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub) -> None:
    serve = sub.add_parser("serve", help="run the fake model API in the foreground, journaling every request")
    serve.add_argument("--port", default="0", help="port on 127.0.0.1 (default: any free port)")
    record = serve.add_mutually_exclusive_group()
    record.add_argument("--journal", type=Path, help="append every request to this JSONL file")
    record.add_argument("--record", type=Path, metavar="DIR",
                        help="record an incident by hand: every request to DIR/journal.jsonl, and DIR/session.json "
                             "(base URL, times, request count)")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.fakeapi.core import FakeModelAPI
    from harness.journal.requests import Journal
    from harness.fakeapi.server import FakeAPIServer

    port = _port(args.port)
    journal_path = _record_journal(args.record) if args.record else args.journal
    try:
        journal = Journal(journal_path, on_append=_echo)
    except OSError as exc:
        raise InputError(f"cannot write the journal there: {exc.strerror or exc}", journal_path) from None
    try:
        server = FakeAPIServer(FakeModelAPI(journal), port=port)
    except OSError as exc:
        journal.close()
        raise InputError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    started = datetime.datetime.now(datetime.timezone.utc)
    if args.record:
        failed = _write_session(args.record, server.base_url, started, None, 0)
        if failed:
            server.close()
            journal.close()
            raise InputError(f"cannot record there: {failed}", args.record)
    with _sigterm_as_interrupt():
        try:
            print(f"fake model API listening on {server.base_url}", file=sys.stderr)
            print(f"  export ANTHROPIC_BASE_URL={server.base_url}", file=sys.stderr)
            if journal_path:
                print(f"  journal: {journal_path}", file=sys.stderr)
            print("  every request gets a default reply; Ctrl-C stops", file=sys.stderr)
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            journal.close()
            failures = [*([journal.write_error] if journal.write_error else []), *server.api.internal_errors]
            if args.record:
                failed = _write_session(args.record, server.base_url, started,
                                        datetime.datetime.now(datetime.timezone.utc), len(journal.exchanges()))
                failures += [f"cannot finish the recording's session.json: {failed}"] if failed else []
                print(f"recorded {len(journal.exchanges())} request(s) in {args.record}/", file=sys.stderr)
    for failure in failures:
        print(f"harness: error: {failure}", file=sys.stderr)
    return EXIT_FAILED if failures else EXIT_OK


def _port(value: object) -> int:
    """A TCP port, 0 (any free one) to 65535: anything else is refused before binding, in one line."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise InputError(f"--port {value}: expected a port number from 0 to 65535 (0: any free port)")
    return int(text)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a service manager, `kill PID`) stops serving as Ctrl-C does, so the recording is finalised.

    Only the first one interrupts: another, arriving while the recording is finalised, must not cut that short.
    """
    stopping = []

    def interrupt(signum, frame) -> None:
        if not stopping:
            stopping.append(signum)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _record_journal(folder: Path) -> Path:
    """A fresh recording folder: an earlier recording is never appended to or overwritten."""
    journal = folder / "journal.jsonl"
    if journal.exists():
        raise InputError("already holds a recording (journal.jsonl); record into a new folder", folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        journal.touch()
    except OSError as exc:
        raise InputError(f"cannot record there: {exc.strerror or exc}", folder) from None
    return journal


def _write_session(folder: Path, base_url: str, started, ended, requests: int) -> str | None:
    """What a recording was, beside its journal: where the agent was pointed, when, and how much it sent.

    Returns what went wrong writing it (a full disk), or None.
    """
    session = {"base_url": base_url, "started": started.isoformat(timespec="seconds"),
               "ended": ended.isoformat(timespec="seconds") if ended else None, "requests": requests,
               "journal": "journal.jsonl"}
    try:
        (folder / "session.json").write_text(json.dumps(session, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        return f"{folder / 'session.json'}: {exc.strerror or exc}"
    return None


def _echo(exchange) -> None:
    """One line per request, for a person watching `harness serve`."""
    flag = " unforeseen" if exchange.unforeseen else ""
    error = f" {exchange.error}" if exchange.error else ""
    try:
        print(f"#{exchange.seq} {exchange.method} {exchange.path} {exchange.status} {exchange.klass}{flag}{error}",
              file=sys.stderr)
    except (OSError, ValueError):  # nobody watching any more (a closed terminal): the journal still has it
        pass
