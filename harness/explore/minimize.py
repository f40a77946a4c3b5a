"""`harness minimize SCENARIO --target T [--check C]`: the shortest steps and replies that still fail the same check.

Delta debugging (Zeller's ddmin) over the steps after the launch, then one
pass over what is left that shortens replies (a tool round trip dropped, a
text cut to "ok") and drops optional step keys (edits, temporary text, usage).
A candidate counts only when the target still completes it and `C` still
fails; one the scenario reader refuses (a temporary check with no temporary
text left, say) is skipped, never run. Every candidate is a real run of the
target through the ordinary runner.

The result is written beside the original as NAME.min.yaml, with no
expectations: like an explored finding, it must pass on a correct agent and
fails on T until T is fixed.
"""

from __future__ import annotations

import copy
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.errors import InputError
from harness.results import FAIL
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.scenario.writer import render
from harness.targets.base import Target
from harness.documents.located import load_located_file, to_plain

SHORT_REPLY = "ok"
OPTIONAL_STEP_KEYS = ("edit", "commit", "temporary", "usage", "timeout_s", "prefix_change", "summary")
StepDoc = dict[str, Any]


@dataclass
class Minimized:
    path: Path
    check: str
    steps_before: int
    steps_after: int
    runs: int  # target runs, the original's included
    changes: list[str] = field(default_factory=list)  # what the reply pass changed, step by step


class _Trial:
    """Runs candidates (memoized by their text) and says whether `check` still fails on the target."""

    def __init__(self, doc: dict, source: Path, target: Target, check: str, report: Callable[[str], None]):
        self.doc, self.source, self.target, self.check, self.report = doc, source, target, check, report
        self.runs = 0
        self._seen: dict[str, bool] = {}

    def text(self, steps: list[StepDoc]) -> str:
        return render({key: (steps if key == "steps" else value) for key, value in self.doc.items()})

    def fails(self, steps: list[StepDoc]) -> bool:
        text = self.text(steps)
        if text not in self._seen:
            try:
                scenario = scenario_from_text(text, self.source)
            except InputError:
                self._seen[text] = False  # not a scenario the reader accepts: never run
                return False
            self.runs += 1
            result = run_scenario(scenario, self.target)
            self._seen[text] = result.error is None and result.verdict_of(self.check) == FAIL
            kinds = " → ".join(next(iter(step)) for step in steps)
            self.report(f"  run {self.runs}: {kinds}: " + ("still fails" if self._seen[text] else
                        f"{self.check} {result.verdict_of(self.check) or 'not judged'}{' (run error)' if result.error else ''}"))
        return self._seen[text]


def minimize(path: Path, target: Target, check: str | None = None,
             report: Callable[[str], None] = lambda line: None) -> Minimized:
    scenario = load_scenario(path)  # refuses a broken file before anything runs
    # Without its expectations: candidates and the result are judged as scenarios a correct agent passes.
    doc = {key: value for key, value in to_plain(load_located_file(path)).items() if key != "expect"}
    original = run_scenario(scenario, target)
    if original.error:
        raise InputError(f"the scenario does not complete on {target.name} ({original.error}); "
                         "minimize needs a run that fails a check", path)
    failing = [c.check for c in original.checks if c.verdict == FAIL]
    if check is None:
        if not failing:
            raise InputError(f"every check passes on {target.name}: nothing fails, so nothing to minimize", path)
        check = failing[0]
    elif check not in failing:
        raise InputError(f"--check {check}: it does not fail on {target.name} "
                         f"({original.verdict_of(check) or 'not a check of this scenario'}); failing: "
                         f"{', '.join(failing) or 'none'}", path)
    report(f"{path}: {check} fails on {target.name} with {len(scenario.steps)} steps; minimizing")
    trial = _Trial(doc, path, target, check, report)
    trial.runs = 1
    first, rest = doc["steps"][0], doc["steps"][1:]
    rest = ddmin(rest, lambda candidate: trial.fails([first, *candidate]))
    steps, changes = shorten([first, *rest], trial.fails)
    out = path.with_name(f"{path.stem}.min{path.suffix}")
    minimized = dict(doc)
    minimized["name"] = f"{doc['name']}-min"
    minimized["description"] = (f"Minimized by harness minimize from {path.name} on {target.name}: {check} still "
                                f"fails with {len(steps)} of {len(doc['steps'])} steps. " + str(doc.get("description", ""))).strip()
    minimized["steps"] = steps
    comment = (f"Minimized from: {path}\nReplay:         harness run {shlex.quote(str(out))} --target "
               f"{shlex.quote(target.replay_spec)}\n"
               "No expectations: a correct agent passes every check here.")
    text = render({key: minimized[key] for key in _ordered(minimized)}, comment)
    scenario_from_text(text, out)  # what is written must read back
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the minimized scenario: {exc.strerror or exc}", out) from None
    return Minimized(out, check, len(doc["steps"]), len(steps), trial.runs, changes)


def _ordered(doc: dict) -> list[str]:
    front = [key for key in ("name", "description") if key in doc]
    return front + [key for key in doc if key not in front]


def ddmin(items: list, fails: Callable[[list], bool]) -> list:
    """A 1-minimal sublist of `items` (in order) for which `fails` holds; `fails(items)` is assumed."""
    if fails([]):
        return []
    parts = 2
    while len(items) >= 2:
        size = math.ceil(len(items) / parts)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        for i in range(len(chunks)):
            complement = [item for j, chunk in enumerate(chunks) if j != i for item in chunk]
            if fails(complement):
                items, parts = complement, max(parts - 1, 2)
                break
        else:
            for chunk in chunks:
                if fails(chunk):
                    items, parts = chunk, 2
                    break
            else:
                if parts >= len(items):
                    break
                parts = min(len(items), parts * 2)
    return items


def shorten(steps: list[StepDoc], fails: Callable[[list[StepDoc]], bool]) -> tuple[list[StepDoc], list[str]]:
    """Each step's reply made as short as still fails, and its optional keys dropped where they do not matter."""
    steps = copy.deepcopy(steps)
    changes: list[str] = []
    for index in range(len(steps)):
        simpler = True
        while simpler:  # each accepted change is built on by the next candidates
            simpler = False
            for label, body in _simpler_bodies(steps[index]):
                if body == next(iter(steps[index].values())):
                    continue  # no simpler at all: accepting it would never end
                candidate = copy.deepcopy(steps)
                candidate[index] = {next(iter(steps[index])): body}
                if fails(candidate):
                    steps, simpler = candidate, True
                    changes.append(f"step {index + 1}: {label}")
                    break
    return steps, changes


def _simpler_bodies(step: StepDoc):
    """(what changed, the simpler body) for one step, tried in order; each builds on the step as it stands."""
    ((kind, body),) = step.items()
    reply = body.get("reply")
    if isinstance(reply, list) and reply and isinstance(reply[-1], str):
        yield "tool round trip dropped", {**body, "reply": reply[-1]}
    if isinstance(reply, str) and len(reply) > len(SHORT_REPLY):
        yield f"reply cut to {SHORT_REPLY!r}", {**body, "reply": SHORT_REPLY}
    for key in OPTIONAL_STEP_KEYS:
        if key in body and not (kind == "compact" and key == "summary"):
            yield f"{key} dropped", {k: v for k, v in body.items() if k != key}
