"""A finding written as a normal scenario file, then replayed by the ordinary runner to show it fails.

The file is the exact steps and replies that ran, with the working
directory they ran in and the caller's text, the checks judged listed explicitly (so a
check added to the defaults later does not change what it tests), and no
expectations: it must pass on a correct agent, so replaying it on the target
it was found on fails, until the target is fixed. The name carries a digest
of the steps, so the same sequence found again overwrites its own file.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.explore import vocabulary as voc
from harness.explore.machine import RUN_ERROR, SCRATCH_NAME, Finding
from harness.results import ERROR, FAIL, RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets.base import Target



@dataclass
class Written:
    path: Path
    name: str


def write_finding(finding: Finding, target: Target, out_dir: Path, explored_with: str) -> Written:
    workdir, checks = finding.setting.workdir, finding.setting.checks
    steps_yaml = voc.scenario_text(SCRATCH_NAME, finding.steps, workdir=workdir, checks=checks)
    digest = hashlib.sha256(f"{target.name}\n{finding.check}\n{steps_yaml}".encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", target.name).strip("._-")[:80]  # the digest keeps names apart
    name = f"found-{slug}-{finding.check.replace('_', '-')}-{digest}"
    description = (f"Found by harness explore on {target.name}: {finding.what} at step {finding.step} of "
                   f"{len(finding.steps)} ({voc.step_kinds(finding.steps)}). {voc.first_line(finding.message)}")
    path = out_dir / f"{name}.yaml"
    comment = (f"Found by: {explored_with}\n"
               f"Replay:   harness run {shlex.quote(str(path))} --target {shlex.quote(target.replay_spec)}\n"
               "No expectations: a correct agent passes every check here. Move it into the library to keep it.")
    text = voc.scenario_text(name, finding.steps, workdir=workdir, description=description, checks=checks,
                             comment=comment)
    scenario_from_text(text, path)  # what is written must read back: never leave a broken scenario behind
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the finding there: {exc.strerror or exc}", out_dir) from None
    return Written(path, name)


def replay(path: Path, finding: Finding, target: Target) -> tuple[bool, RunResult]:
    """Run the written file through the ordinary runner: does it fail as the exploration saw?"""
    result = run_scenario(load_scenario(path), target)
    if finding.check == RUN_ERROR:
        return result.status == ERROR and result.error is not None, result
    return result.verdict_of(finding.check) == FAIL, result
