"""The scenario library's wall time through `harness run`, serial against `-n 2`.

The command a developer types, as a separate process, so that everything is
counted: start-up, every run's fake API and workspace, the steps, the checks,
the reports. One serial run and one with two workers; each takes minutes, so
they are not repeated, and the machine's load average is recorded beside them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from harness.bench.machine import load_average

LIBRARY = ["scenarios"]
QUICK_LIBRARY = ["scenarios/retry-after-wrong-answer.yaml", "scenarios/three-turns-three-processes.yaml"]
TARGET = "reference:*"
_TOTALS = re.compile(r"(\d+) runs: (\d+) as expected, (\d+) unexpected, (\d+) errors")


def run_library(paths: list[str], workers: int, report_dir: Path, checkout: Path) -> dict:
    argv = [sys.executable, "-m", "harness", "run", *paths, "--target", TARGET, "-n", str(workers), "-q",
            "--report-dir", str(report_dir)]
    load = load_average()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    totals = _TOTALS.findall(done.stdout)
    if not totals:
        raise RuntimeError(f"`harness run -n {workers}` printed no totals (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-500:]}")
    runs, as_expected, unexpected, errors = (int(x) for x in totals[-1])
    return {"workers": workers, "wall_s": round(wall, 2), "exit_code": done.returncode, "runs": runs,
            "as_expected": as_expected, "unexpected": unexpected, "errors": errors,
            "load_average_before": load, "load_average_after": load_average()}


def measure(scratch: Path, checkout: Path, quick: bool, progress: Callable[[str], None] = lambda line: None) -> dict:
    paths = QUICK_LIBRARY if quick else LIBRARY
    result = {"paths": paths, "target": TARGET, "library": "reference:* over " + " ".join(paths)}
    for workers in (1, 2):
        got = run_library(paths, workers, scratch / f"library-n{workers}", checkout)
        progress(f"harness run {' '.join(paths)} --target '{TARGET}' -n {workers}: {got['runs']} runs in "
                 f"{got['wall_s']:.1f} s (exit {got['exit_code']}, {got['unexpected']} unexpected, {got['errors']} errors)")
        result["serial" if workers == 1 else "two_workers"] = got
    result["speedup"] = round(result["serial"]["wall_s"] / result["two_workers"]["wall_s"], 2)
    return result
