"""`pytest scenarios/`: each scenario × target is a test item with a readable failure.

Registered through the `pytest11` entry point. YAML files inside a folder
named `scenarios` are collected; a broken one is a collection error (never a
skip). Each item starts its own fake API on its own port with its own HOME,
so `pytest -n auto` works unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.results import RunResult

SCENARIO_FOLDER = "scenarios"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent launcher scenarios")
    group.addoption("--target", action="append", dest="harness_targets", default=[], metavar="T",
                    help="target to run each scenario against (repeatable; default: reference)")
    group.addoption("--harness-journal-dir", dest="harness_journal_dir", default=None, metavar="DIR",
                    help="keep each scenario run's journal (JSONL) in DIR")


def pytest_configure(config: pytest.Config) -> None:
    from harness.targets import resolve_targets

    try:
        config._harness_targets = resolve_targets(config.getoption("harness_targets") or ["reference"])  # type: ignore[attr-defined]
    except InputError as exc:
        raise pytest.UsageError(f"harness: {exc}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix in (".yaml", ".yml") and SCENARIO_FOLDER in file_path.parent.parts:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self):
        from harness.scenario_file import load_scenario

        try:
            scenario = load_scenario(self.path)
        except InputError as exc:
            raise self.CollectError(str(exc)) from None
        for target in self.config._harness_targets:  # type: ignore[attr-defined]
            yield ScenarioItem.from_parent(self, name=f"{scenario.name}[{target.name}]", scenario=scenario, target=target)


class ScenarioMismatch(Exception):
    def __init__(self, result: RunResult):
        super().__init__(result.scenario)
        self.result = result


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario, target, **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.target = target
        self.result: RunResult | None = None

    def runtest(self) -> None:
        from harness.runner import journal_name, run_scenario

        journal_dir = self.config.getoption("harness_journal_dir")
        journal = Path(journal_dir) / journal_name(self.scenario, self.target) if journal_dir else None
        self.result = run_scenario(self.scenario, self.target, journal)
        if not self.result.as_expected:
            raise ScenarioMismatch(self.result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioMismatch):
            from harness.report.cells import explain

            return explain(excinfo.value.result)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scenario {self.scenario.name} · target {self.target.name}"
