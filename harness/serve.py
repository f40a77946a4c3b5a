"""`harness serve`: the fake model API in the foreground, for pointing an agent at by hand.

`--record DIR` keeps what an incident sent (DIR/journal.jsonl) and what the
recording was (DIR/session.json: base URL, start and end, request count), so
`harness import DIR/journal.jsonl` can turn it into a scenario.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from harness.errors import InputError

EXIT_OK = 0


def run(args: argparse.Namespace) -> int:
    from harness.fakeapi.core import FakeModelAPI
    from harness.fakeapi.journal import Journal
    from harness.fakeapi.server import FakeAPIServer

    journal_path = _record_journal(args.record) if args.record else args.journal
    journal = Journal(journal_path, on_append=_echo)
    try:
        server = FakeAPIServer(FakeModelAPI(journal), port=args.port)
    except OSError as exc:
        raise InputError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    started = datetime.datetime.now(datetime.timezone.utc)
    if args.record:
        _write_session(args.record, server.base_url, started, None, 0)
    print(f"fake model API listening on {server.base_url}", file=sys.stderr)
    print(f"  export ANTHROPIC_BASE_URL={server.base_url}", file=sys.stderr)
    if journal_path:
        print(f"  journal: {journal_path}", file=sys.stderr)
    print("  every request gets a default reply; Ctrl-C stops", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        journal.close()
        if args.record:
            _write_session(args.record, server.base_url, started, datetime.datetime.now(datetime.timezone.utc),
                           len(journal.exchanges()))
            print(f"recorded {len(journal.exchanges())} request(s) in {args.record}/", file=sys.stderr)
    return EXIT_OK


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


def _write_session(folder: Path, base_url: str, started, ended, requests: int) -> None:
    """What a recording was, beside its journal: where the agent was pointed, when, and how much it sent."""
    session = {"base_url": base_url, "started": started.isoformat(timespec="seconds"),
               "ended": ended.isoformat(timespec="seconds") if ended else None, "requests": requests,
               "journal": "journal.jsonl"}
    (folder / "session.json").write_text(json.dumps(session, indent=2) + "\n", encoding="utf-8")


def _echo(exchange) -> None:
    """One line per request, for a person watching `harness serve`."""
    flag = " unforeseen" if exchange.unforeseen else ""
    error = f" {exchange.error}" if exchange.error else ""
    print(f"#{exchange.seq} {exchange.method} {exchange.path} {exchange.status} {exchange.klass}{flag}{error}", file=sys.stderr)
