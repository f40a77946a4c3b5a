"""`pytest scenarios/`: each scenario × target (or baseline → candidate) is a test item with a readable failure.

Registered through the `pytest11` entry point. YAML files inside a folder
named `scenarios` are collected; a broken one is a collection error (never a
skip). Each item starts its own fake API on its own port with its own HOME,
so `pytest -n auto` works unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.results import CANNOT_EXPRESS, RunResult
# Every entry point installs the two rules the scenario reader is given from above (harness/scenario/installed_rules.py).
import harness.fakeapi.formats.anthropic  # noqa: F401,E402
import harness.targets  # noqa: F401,E402

SCENARIO_FOLDER = "scenarios"
TARGETS_INI = "harness_targets"
NO_TARGET = (f"no target: pass --target T (for example --target reference, the built-in reference agent), or "
             f"configure one with `{TARGETS_INI}` in the pytest configuration; without one, nothing would say "
             "which agent these scenarios judged")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent launcher scenarios")
    group.addoption("--target", action="append", dest="harness_targets", default=[], metavar="T",
                    help="target to run each scenario against (repeatable; default: reference)")
    group.addoption("--harness-journal-dir", dest="harness_journal_dir", default=None, metavar="DIR",
                    help="keep each scenario run's journal (JSONL) in DIR")
    group.addoption("--harness-repeat", dest="harness_repeat", type=int, default=1, metavar="N",
                    help="run each scenario × target N times, each a separate item (a flakiness budget: make soak)")
    group.addoption("--baseline", dest="harness_baseline", default=None, metavar="T1",
                    help="compare: each scenario runs on T1 and on --candidate; a regression fails the item")
    group.addoption("--candidate", dest="harness_candidate", default=None, metavar="T2", help="compare: see --baseline")
    group.addoption("--fail-on-unchanged-fail", dest="harness_fail_on_unchanged_fail", action="store_true",
                    help="compare: a check failing on both sides fails the item too")
    group.addoption("--require-fix", dest="harness_require_fix", action="append", default=[], metavar="SCENARIO",
                    help="compare: this scenario must fail on the baseline and pass on the candidate; repeatable")
    group.addoption("--target-file-from-working-tree", dest="harness_target_file_from_working_tree", action="store_true",
                    help="for FILE@REV targets, read the target file from the working tree instead of as it is at REV")
    parser.addini(TARGETS_INI, type="linelist", default=[],
                  help="targets to run scenarios against when no --target is given (a project's configured default)")


def pytest_configure(config: pytest.Config) -> None:
    from harness.targets import resolve_target, resolve_targets

    baseline, candidate = config.getoption("harness_baseline"), config.getoption("harness_candidate")
    from_tree = {"target_file_from_working_tree": config.getoption("harness_target_file_from_working_tree")}
    try:
        if config.getoption("harness_repeat") < 1:
            raise InputError(f"--harness-repeat must be at least 1, got {config.getoption('harness_repeat')}")
        if not hasattr(config, "workerinput"):  # once per session: what the runs of a killed session left behind
            from harness.isolation.workspace import sweep_stale_workspaces

            sweep_stale_workspaces()
        journal_dir = config.getoption("harness_journal_dir")
        if journal_dir is not None and not hasattr(config, "workerinput"):  # xdist workers share their session's
            from harness.report import folder as report_folder
            report_folder.lock_folder(Path(journal_dir))  # two sessions there would overwrite each other's journals
        if baseline is None and candidate is None:
            # A scenario run without a named agent used to run the reference agent in silence: an outside team's
            # `pytest` went green on items `[reference]` while its own agent never ran. None: collection says so.
            specs = config.getoption("harness_targets") or config.getini(TARGETS_INI)
            config._harness_targets = resolve_targets(specs, **from_tree) if specs else None  # type: ignore[attr-defined]
            config._harness_pair = None  # type: ignore[attr-defined]
            return
        if baseline is None or candidate is None or config.getoption("harness_targets"):
            raise InputError("compare with both --baseline and --candidate, and without --target")
        pair = []
        for option, spec in (("--baseline", baseline), ("--candidate", candidate)):
            targets = resolve_target(spec, **from_tree)
            if len(targets) != 1:
                raise InputError(f"{option} {spec!r} stands for {len(targets)} targets; name one")
            pair.append(targets[0])
        config._harness_targets = []  # type: ignore[attr-defined]
        config._harness_pair = tuple(pair)  # type: ignore[attr-defined]
    except InputError as exc:
        raise pytest.UsageError(f"harness: {exc}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix in (".yaml", ".yml") and SCENARIO_FOLDER in file_path.parent.parts:
        if _unnamed_finding(file_path, parent.config):
            return None
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _unnamed_finding(file_path: Path, config: pytest.Config) -> bool:
    """A file in `harness explore`'s inbox (scenarios/.../found/) that the command line did not name.

    As with `harness run`, the inbox is replayed when named and otherwise left out of the library.
    """
    from harness.scenario.reader import FOUND_FOLDER

    parts = file_path.parent.parts
    below_scenarios = parts[parts.index(SCENARIO_FOLDER) + 1:]
    if FOUND_FOLDER not in below_scenarios:
        return False
    found_dir = Path(*parts[:parts.index(SCENARIO_FOLDER) + 1 + below_scenarios.index(FOUND_FOLDER) + 1]).resolve()
    for arg in config.args:
        named = (Path(config.invocation_params.dir) / arg.split("::")[0]).resolve()
        if named == found_dir or found_dir in named.parents:
            return False
    return True


class ScenarioFile(pytest.File):
    def collect(self):
        from harness.scenario.reader import load_scenario

        try:
            scenario = load_scenario(self.path)
        except InputError as exc:
            raise self.CollectError(str(exc)) from None
        pair = self.config._harness_pair  # type: ignore[attr-defined]
        if pair is None and self.config._harness_targets is None:  # type: ignore[attr-defined]
            raise self.CollectError(f"harness: {NO_TARGET}")
        if pair is not None:
            name = f"{scenario.name}[{pair[0].name} → {pair[1].name}]"
            yield ComparisonItem.from_parent(self, name=name, scenario=scenario, baseline=pair[0], candidate=pair[1])
        repeat = self.config.getoption("harness_repeat")
        for target in self.config._harness_targets:  # type: ignore[attr-defined]
            for round_ in range(1, repeat + 1):
                label = target.name if repeat == 1 else f"{target.name}·{round_}/{repeat}"
                yield ScenarioItem.from_parent(self, name=f"{scenario.name}[{label}]", scenario=scenario, target=target)


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
        from harness.run.runner import journal_name, run_scenario

        journal_dir = self.config.getoption("harness_journal_dir")
        journal = Path(journal_dir) / journal_name(self.scenario, self.target) if journal_dir else None
        self.result = run_scenario(self.scenario, self.target, journal)
        if self.result.status == CANNOT_EXPRESS:  # shown as a skip with its reason: never counted a pass
            pytest.skip(f"{self.target.name} cannot express {self.result.cannot_express}")
        if not self.result.as_expected:
            raise ScenarioMismatch(self.result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioMismatch):
            from harness.redaction import redact
            from harness.report.wording import explain

            return redact(explain(excinfo.value.result))
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scenario {self.scenario.name} · target {self.target.name}"


class GateFailure(Exception):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class ComparisonItem(pytest.Item):
    """One scenario through baseline and candidate; fails on what `harness diff` would fail on."""

    def __init__(self, *, scenario, baseline, candidate, **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.baseline = baseline
        self.candidate = candidate

    def runtest(self) -> None:
        import tempfile

        from harness.run.differential import compare
        from harness.report import comparison as report

        required = [n for n in self.config.getoption("harness_require_fix") if n == self.scenario.name]
        journal_dir = self.config.getoption("harness_journal_dir")
        with tempfile.TemporaryDirectory(prefix="harness-compare-") as scratch:
            folder = Path(journal_dir) / self.scenario.name if journal_dir else Path(scratch)
            result = compare([self.scenario], self.baseline, self.candidate, folder,
                             fail_on_unchanged_fail=self.config.getoption("harness_fail_on_unchanged_fail"),
                             required_fixes=required)
        if result.gate_failures():
            raise GateFailure(report.table(result) + "\n\n" + report.details(result))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GateFailure):
            from harness.redaction import redact

            return redact(excinfo.value.text)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scenario {self.scenario.name} · {self.baseline.name} → {self.candidate.name}"
