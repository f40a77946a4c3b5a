"""The command line: one subcommand per entry of COMMANDS, and its exit codes.

0: every verdict matches its expectation. 1: some verdict differs, or a run
errored. 2: bad input or usage (a broken scenario, an unknown target, an
unwritable report folder), reported as one line naming where and what.
130: stopped by Ctrl-C or SIGTERM; the reports written say the run is incomplete.
A CI job or a script branches on these, so `harness --help` lists them (EXIT_CODES),
and the subcommands from COMMANDS itself, never from a hand-kept list that drifts.

Each subcommand is one module of harness/commands/ with `add_parser(sub)` and
`run(args, command)`; this module only dispatches, and installs what every
command that starts agents needs first (the stop handlers, the stale-workspace sweep).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import Sequence

from harness.commands.common import EXIT_DIFFERS, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK  # the exit codes, named here
from harness import DISTRIBUTION, __version__
from harness.errors import InputError
from harness.isolation.process import request_stop
# Every entry point installs the two rules the scenario reader is given from above (harness/scenario/installed_rules.py).
import harness.fakeapi.formats.anthropic  # noqa: F401,E402
import harness.targets  # noqa: F401,E402

# The subcommands in the order `harness --help` lists them: the name, and its module under harness/commands/.
COMMANDS = {"init": "init", "doctor": "doctor", "run": "run", "diff": "diff", "explore": "explore", "import": "importing",
            "merge-reports": "merge_reports", "minimize": "minimize", "bisect": "bisect", "serve": "serve", "targets": "targets", "install": "install", "clean": "clean"}
STARTS_AGENTS = ("run", "diff", "explore", "minimize", "bisect", "doctor")


def _version() -> str:
    """The installed distribution's version; the source's own when run from a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return __version__


def _command(name: str):
    return importlib.import_module(f"harness.commands.{COMMANDS[name]}")


DESCRIPTION = ("A differential test harness for AI agent launchers: each scenario's steps run as\n"
               "fresh processes of the agent against a fake model API, judged by the requests sent.")
# What `harness --help` says each exit code means (the docstring's above, one line each).
EXIT_CODES = (
    (EXIT_OK, "every verdict matches its expectation (harness diff: no regression and no error)"),
    (EXIT_DIFFERS, "a verdict differs from its expectation, a run errored, something was found, or the harness failed"),
    (EXIT_INPUT, "bad input or usage, said in one line: harness: error: FILE:LINE: ..."),
    (EXIT_INTERRUPTED, "stopped by Ctrl-C or SIGTERM; the reports written say the run is incomplete"),
)


def _epilog() -> str:
    width = max(len(str(code)) for code, _ in EXIT_CODES)
    return "\n".join(["exit codes:", *(f"  {code:<{width}}  {meaning}" for code, meaning in EXIT_CODES), "",
                      "`harness COMMAND --help` shows a command's own options."])


class _Listed:
    """The subcommands action as each command module sees it: every command it adds is listed with a one-line help.

    argparse lists a subcommand under `harness --help` only when its module passed `help=`; one that passed
    only a description is listed with the description's first line, so no command added to COMMANDS is left out.
    """

    def __init__(self, sub: argparse._SubParsersAction):
        self.sub = sub

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        if not kwargs.get("help"):
            kwargs["help"] = (kwargs.get("description") or "").strip().split("\n")[0] or f"the {name} command"
        return self.sub.add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description=DESCRIPTION, epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"harness {_version()} (the {DISTRIBUTION} distribution)")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for name in COMMANDS:
        _command(name).add_parser(_Listed(sub))
    return parser


def _stop_on_signal(signum, frame) -> None:
    request_stop()  # remembered too: a raise that lands inside a gc callback is dropped by Python
    raise KeyboardInterrupt  # Ctrl-C, or a CI job cancelled: the same orderly stop


def main(argv: Sequence[str] | None = None) -> int:
    """Everything the command prints goes through the one redactor: an agent's credentials reach no console."""
    from harness.redaction import redacting_console

    with redacting_console():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in STARTS_AGENTS:
        from harness.isolation import stopping
        from harness.isolation.workspace import sweep_stale_workspaces

        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, _stop_on_signal)
        stopping.install()  # before any thread starts: a stop's sender is told apart (an agent, not the user)
        sweep_stale_workspaces()  # what the runs of a killed harness left in the temporary folder
    try:
        return _command(args.command).run(args, list(sys.argv if argv is None else ["harness", *argv]))
    except InputError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
