"""Shared test plumbing: the run and served fixtures, and the defect-matrix table printed at the end.

Library tests attach one row each (via user_properties, which pytest-xdist
carries from workers to the controller); the table is printed in the
terminal summary so every `make test` shows what each defect breaks.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from hypothesis import settings

from harness import config
from harness.config import TOOLS_ENV
from harness.explore import profiles

from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.results import RunResult
from harness.run.runner import run_scenario
from harness.scenario.model import Scenario
from harness.targets.base import Target

# The agent builds `make tools` installed, wherever a test's harness runs from (a subprocess in tmp_path finds no
# [tool.harness] table and would otherwise install them again into the user's cache folder).
os.environ.setdefault(TOOLS_ENV, str(config.load(Path(__file__).resolve().parent.parent).tools_folder()))

# Derandomized unless asked otherwise (HYPOTHESIS_PROFILE=deep, or --hypothesis-profile deep): a red CI run
# is the same red run on a laptop.
profiles.register()
settings.load_profile(os.environ.get(profiles.ENV_VARIABLE, profiles.CI))

MATRIX_KEY = "harness_defect_matrix_row"
CLAUDE_CODE_KEY = "harness_claude_code_cell"
_rows: list[dict] = []
_claude_code_cells: list[dict] = []
_SHORT = {"identity_stable": "identity", "appended_exactly_once": "appended", "prefix_stable": "prefix",
          "history_preserved": "history", "temporary_text_transient": "temporary"}


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == MATRIX_KEY:
            _rows.append(json.loads(value))
        elif key == CLAUDE_CODE_KEY:
            _claude_code_cells.append(json.loads(value))


def pytest_terminal_summary(terminalreporter):
    if _rows:
        rows = sorted(_rows, key=lambda r: (r["target"] != "reference", r["order"]))
        checks = rows[0]["checks"]
        header = ["target", *checks, "verdicts as expected"]
        table = [[r["target"], *(f"fails {r['fails'][c]}/{r['judged'][c]}" for c in checks),
                  f"{r['as_expected']}/{r['scenarios']}"] for r in rows]
        _write_table(terminalreporter, "reference agent × scenario library",
                     "scenarios in which each check failed, of those that list it, per target (from the journals of real runs):", header, table)
    if _claude_code_cells:
        scenarios = sorted({c["scenario"] for c in _claude_code_cells})
        targets = sorted({c["target"] for c in _claude_code_cells}, key=lambda t: [-int(n) for n in t.split("@")[1].split("+")[0].split(".")] + [t])
        cells = {(c["target"], c["scenario"]): c["fails"] for c in _claude_code_cells}
        table = [[t, *(", ".join(_SHORT.get(f, f) for f in cells[(t, s)]) or "pass" if (t, s) in cells else "-" for s in scenarios)]
                 for t in targets]
        _write_table(terminalreporter, "real Claude Code builds × Claude Code suite",
                     "checks that failed, per build and launch policy (each as expected, and equal to the raw bytes):",
                     ["target", *scenarios], table)


def _write_table(terminalreporter, title: str, caption: str, header: list[str], rows: list[list[str]]) -> None:
    table = [header] + rows
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    terminalreporter.section(title)
    terminalreporter.write_line(caption)
    for i, row in enumerate(table):
        terminalreporter.write_line("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            terminalreporter.write_line("  ".join("-" * w for w in widths))


@pytest.fixture
def run(tmp_path):
    """run(scenario, target, keep=False) -> RunResult; kept workspaces are removed afterwards."""
    kept: list[Path] = []
    counter = iter(range(1000))

    def _run(sc: Scenario, tg: Target, keep: bool = False) -> RunResult:
        journal = tmp_path / f"journal-{next(counter)}.jsonl"
        result = run_scenario(sc, tg, journal, keep_workspace=keep)
        if result.workspace:
            kept.append(Path(result.workspace))
        assert bool(result.workspace) == keep
        return result

    yield _run
    for root in kept:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def served(tmp_path):
    """(api, server, journal path): a live fake API on 127.0.0.1 with an on-disk journal."""
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    api = FakeModelAPI(journal)
    with FakeAPIServer(api) as server:
        yield api, server, path
    journal.close()


@pytest.fixture
def bystander():
    """A listening socket on the host's 127.0.0.1, standing for anything outside the fake API: nothing may connect to it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    yield listener
    listener.close()
