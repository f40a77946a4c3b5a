"""pytest items for scenarios: each scenario × target (or baseline → candidate) a test item with a readable failure.

Registered through the `pytest11` entry point, so it is loaded in every suite
of a project that installs the harness: it must fit a team's own suite. Its
options are all `--harness-*` (a conftest of the team's may define its own
`--target`), and it collects only what the project configured:

- a `.yaml`/`.yml` file inside one of the `scenarios` paths of the project's
  `[tool.harness]` table (harness/config), except explore's inbox and folders
  named `found` below them unless the command line names them;
- a `.yaml`/`.yml` file named itself on the command line.

Nothing else, so an unrelated fixture under `tests/fixtures/scenarios/` is
never read as a scenario; with no configuration, only files named on the
command line. When pytest is given no paths (it uses `testpaths` or the
rootdir), the configured scenario paths are collected too. A broken scenario
is a collection error (never a skip). Each item starts its own fake API on
its own port with its own HOME, so `pytest -n auto` works unchanged.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from harness import config as harness_config
from harness.errors import InputError
from harness.results import CANNOT_EXPRESS, RunResult
# Every entry point installs the two rules the scenario reader is given from above (harness/scenario/installed_rules.py).
import harness.fakeapi.formats.anthropic  # noqa: F401,E402
import harness.targets  # noqa: F401,E402

SCENARIO_SUFFIXES = (".yaml", ".yml")
NO_TARGET = ("no target: pass --harness-target T (for example --harness-target reference, the built-in reference "
             "agent), or name the project's in `targets` of its [tool.harness] table; without one, nothing would say "
             "which agent these scenarios judged")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent launcher scenarios (the [tool.harness] table sets the defaults)")
    group.addoption("--harness-target", action="append", dest="harness_targets", default=[], metavar="T",
                    help="target to run each scenario against, repeatable (default: the table's `targets`)")
    group.addoption("--harness-journal-dir", dest="harness_journal_dir", default=None, metavar="DIR",
                    help="keep each scenario run's journal (JSONL) in DIR")
    group.addoption("--harness-repeat", dest="harness_repeat", type=int, default=1, metavar="N",
                    help="run each scenario × target N times, each a separate item (a flakiness budget: make soak)")
    group.addoption("--harness-retries", dest="harness_retries", type=int, default=0, metavar="N",
                    help="attempt a scenario item whose verdicts differ up to N more times; one that then matches is "
                         "flaky and fails, unless --harness-allow-flaky (as `harness run --retries`)")
    group.addoption("--harness-allow-flaky", dest="harness_allow_flaky", action="store_true",
                    help="a flaky scenario item passes, with a warning that names it")
    group.addoption("--harness-baseline", dest="harness_baseline", default=None, metavar="T1",
                    help="compare: each scenario runs on T1 and on --harness-candidate; a regression fails the item")
    group.addoption("--harness-candidate", dest="harness_candidate", default=None, metavar="T2",
                    help="compare: see --harness-baseline")
    group.addoption("--harness-fail-on-unchanged-fail", dest="harness_fail_on_unchanged_fail", action="store_true",
                    help="compare: a check failing on both sides fails the item too")
    group.addoption("--harness-require-fix", dest="harness_require_fix", action="append", default=[], metavar="SCENARIO",
                    help="compare: this scenario must fail on the baseline and pass on the candidate; repeatable")
    group.addoption("--harness-target-file-from-working-tree", dest="harness_target_file_from_working_tree",
                    action="store_true",
                    help="for FILE@REV targets, read the target file from the working tree instead of as it is at REV")
    group.addoption("--harness-shard", dest="harness_shard", default=None, metavar="i/n",
                    help="keep only shard i of n (1-based) of the scenario items, dealt as `harness run --shard i/n` "
                         "deals its runs; the others are deselected (the session's other tests are left alone)")


def pytest_configure(config: pytest.Config) -> None:
    from harness.targets import resolve_target, resolve_targets

    baseline, candidate = config.getoption("harness_baseline"), config.getoption("harness_candidate")
    from_tree = {"target_file_from_working_tree": config.getoption("harness_target_file_from_working_tree")}
    try:
        project = harness_config.load(config.rootpath)
        config._harness_config = project  # type: ignore[attr-defined]
        config._harness_collection = _Collection(project, config)  # type: ignore[attr-defined]
        _add_configured_paths(config, project)
        if config.getoption("harness_shard") is not None:
            from harness.shards.assignment import parse_shard

            config._harness_shard = parse_shard(config.getoption("harness_shard"), "--harness-shard")  # type: ignore[attr-defined]
        if config.getoption("harness_repeat") < 1:
            raise InputError(f"--harness-repeat must be at least 1, got {config.getoption('harness_repeat')}")
        if config.getoption("harness_retries") < 0:
            raise InputError(f"--harness-retries must be at least 0, got {config.getoption('harness_retries')}")
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
            specs = config.getoption("harness_targets") or project.target_specs()
            config._harness_targets = resolve_targets(specs, **from_tree) if specs else None  # type: ignore[attr-defined]
            config._harness_pair = None  # type: ignore[attr-defined]
            return
        if baseline is None or candidate is None or config.getoption("harness_targets"):
            raise InputError("compare with both --harness-baseline and --harness-candidate, and without --harness-target")
        pair = []
        for option, spec in (("--harness-baseline", baseline), ("--harness-candidate", candidate)):
            targets = resolve_target(spec, **from_tree)
            if len(targets) != 1:
                raise InputError(f"{option} {spec!r} stands for {len(targets)} targets; name one")
            pair.append(targets[0])
        config._harness_targets = []  # type: ignore[attr-defined]
        config._harness_pair = tuple(pair)  # type: ignore[attr-defined]
    except InputError as exc:
        raise pytest.UsageError(f"harness: {exc}") from None


def _add_configured_paths(config: pytest.Config, project: harness_config.Config) -> None:
    """`pytest` with no paths collects the configured scenarios too, wherever `testpaths` points."""
    if project.path is None or config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    given = [Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args]
    for folder in _Collection.configured(project):
        if folder.exists() and not any(folder == g or folder.is_relative_to(g) for g in given):
            config.args.append(str(folder))
            given.append(folder)


class _Collection:
    """Which YAML files are scenarios: inside the configured paths, or named on the command line."""

    def __init__(self, project: harness_config.Config, config: pytest.Config):
        self.paths = self.configured(project) if project.path is not None else []
        self.inbox = project.inbox()
        here = Path(config.invocation_params.dir)
        given = config.args if config.args_source == pytest.Config.ArgsSource.ARGS else []  # not testpaths
        self.named = [(here / arg.split("::")[0]).resolve() for arg in given]

    @staticmethod
    def configured(project: harness_config.Config) -> list[Path]:
        return [(project.folder / p).resolve() for p in project.scenarios]

    def wants(self, file_path: Path) -> bool:
        if file_path.suffix not in SCENARIO_SUFFIXES:
            return False
        file_path = file_path.resolve()
        if file_path in self.named:
            return True
        inside = next((p for p in self.paths if file_path == p or file_path.is_relative_to(p)), None)
        return inside is not None and not self._unnamed_inbox(file_path, inside)

    def _unnamed_inbox(self, file_path: Path, scenarios: Path) -> bool:
        """In explore's inbox (or a `found` folder, as `harness run` skips them) and not named on the command line.

        As with `harness run`, the inbox is replayed when named and otherwise left out of the library.
        """
        from harness.scenario.reader import FOUND_FOLDER

        inboxes = [self.inbox] if file_path.is_relative_to(self.inbox) and self.inbox != scenarios else []
        below = file_path.relative_to(scenarios).parts[:-1]
        if FOUND_FOLDER in below:
            inboxes.append(scenarios.joinpath(*below[:below.index(FOUND_FOLDER) + 1]))
        return any(not any(n == box or n.is_relative_to(box) for n in self.named) for box in inboxes)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--harness-shard i/n`: the scenario items of other shards deselected, as pytest's `-k` deselects.

    Only this plugin's items are dealt (by the same assignment as `harness run --shard`, over the item's
    scenario and target): a team's own tests in the session are not this option's to split, and a plugin
    that shards every item (pytest-split) can still do so beside it.
    """
    shard = getattr(config, "_harness_shard", None)
    if shard is None:
        return
    from harness.shards.assignment import runs_of

    ids = {item: _run_id(item) for item in items if isinstance(item, (ScenarioItem, ComparisonItem))}
    owned = runs_of(shard, list(ids.values()))
    deselected = [item for item, run in ids.items() if run not in owned]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        dropped = set(deselected)
        items[:] = [item for item in items if item not in dropped]
    config._harness_shard_counts = (len(ids) - len(deselected), len(ids))  # type: ignore[attr-defined]


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    counts = getattr(config, "_harness_shard_counts", None)
    if counts is None:
        return None
    kept, total = counts
    return (f"harness: shard {config._harness_shard}: {kept} of {total} scenario items, "  # type: ignore[attr-defined]
            f"{total - kept} deselected")


def _run_id(item: pytest.Item) -> tuple[str, str]:
    """(scenario, target) as `harness run` names the run; the item's label (a repeat's round, a pair) otherwise."""
    scenario = item.scenario.name  # type: ignore[attr-defined]
    return scenario, item.name[len(scenario) + 1:-1] if item.name.startswith(f"{scenario}[") else item.name


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    collection = getattr(parent.config, "_harness_collection", None)
    if collection is not None and collection.wants(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


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
        from harness.report.wording import attempts_line
        from harness.run.attempts import Attempts
        from harness.run.runner import journal_name, run_attempts

        journal_dir = self.config.getoption("harness_journal_dir")
        journal = Path(journal_dir) / journal_name(self.scenario, self.target) if journal_dir else None
        self.result = run_attempts(self.scenario, self.target, journal,
                                   attempts=Attempts(retries=self.config.getoption("harness_retries")))
        if self.result.status == CANNOT_EXPRESS:  # shown as a skip with its reason: never counted a pass
            pytest.skip(f"{self.target.name} cannot express {self.result.cannot_express}")
        if self.result.flaky and self.config.getoption("harness_allow_flaky"):
            warnings.warn(f"FLAKY: {self.scenario.name} on {self.target.name}: {attempts_line(self.result)}", stacklevel=1)
            return
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
