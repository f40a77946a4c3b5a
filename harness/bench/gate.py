"""The gate against the agents' own time: make run's wall time per suite beside the physical limit.

However the harness schedules its runs, a suite cannot end sooner than the CPU
time its agent processes need, spread over every core: sum(cpu_s) / cores.
Each suite is run as make run runs it (`harness run --suite NAME -n <cores>`,
a separate process, every report written), its wall time measured, and the
agents' CPU time read from its results.json (each step's cpu_s, every attempt
counted; the step warden takes it from the kernel when the agent exits). The
figure is wall / limit: 1.0 would be a gate that only ever waits for agents.

What this cannot see is said beside the figure: steps run in the harness's own
process (in-process targets) have no cpu_s of their own, and an agent's time
waiting on the fake API's replies or on timers is wall time no core spends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from harness.bench.machine import load_average

QUICK_SUITES = ["library"]


def suites(checkout: Path) -> list[str]:
    from harness import config

    return [suite.name for suite in config.load(checkout).chosen_suites(["all"])]


def agent_cpu(results: Path) -> tuple[float, int, int]:
    """(seconds of agent CPU, steps measured, steps without a figure) over every run and attempt in results.json.

    A step whose time another step's cpu_s includes (`cpu_of_steps`: one launcher process) is measured, not missing."""
    total, measured, unmeasured = 0.0, 0, 0
    for run in json.loads(results.read_text(encoding="utf-8"))["runs"]:
        for attempt in [*run.get("attempts", []), run]:
            carried = {index for step in attempt["steps"] for index in step.get("cpu_of_steps", [])}
            for step in attempt["steps"]:
                if step.get("cpu_s") is not None:
                    total += step["cpu_s"]
                    measured += 1
                elif step["index"] in carried:
                    measured += 1
                else:
                    unmeasured += 1
    return total, measured, unmeasured


def run_suite(name: str, cores: int, report_dir: Path, checkout: Path) -> dict:
    argv = [sys.executable, "-m", "harness", "run", "--suite", name, "-n", str(cores), "-q", "--report-dir", str(report_dir)]
    load = load_average()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    results = report_dir / "results.json"
    if not results.is_file():
        raise RuntimeError(f"`harness run --suite {name}` wrote no results.json (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-500:]}")
    cpu, measured, unmeasured = agent_cpu(results)
    limit = cpu / cores
    return {"suite": name, "workers": cores, "wall_s": round(wall, 2), "agent_cpu_s": round(cpu, 2),
            "limit_s": round(limit, 2), "gate": round(wall / limit, 2) if limit > 0 else None,
            "steps_measured": measured, "steps_unmeasured": unmeasured, "exit_code": done.returncode,
            "runs": len(json.loads(results.read_text(encoding="utf-8"))["runs"]),
            "load_average_before": load, "load_average_after": load_average()}


def measure(scratch: Path, checkout: Path, quick: bool, progress: Callable[[str], None] = lambda line: None,
            keep: Path | None = None) -> dict:
    """Every suite in turn; the report of one that did not exit 0 is copied to `keep` (the scratch goes)."""
    cores = os.cpu_count() or 1
    names = QUICK_SUITES if quick else suites(checkout)
    rows = []
    for name in names:
        got = run_suite(name, cores, scratch / f"gate-{name}", checkout)
        if got["exit_code"] and keep is not None:
            kept = keep / f"gate-{name}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(scratch / f"gate-{name}", kept)
            got["report_kept"] = str(kept)
        gate = f"×{got['gate']:.2f}" if got["gate"] is not None else "no agent CPU measured"
        progress(f"{name}: {got['runs']} runs in {got['wall_s']:.1f} s on {cores} workers; agents' CPU "
                 f"{got['agent_cpu_s']:.1f} s / {cores} cores = {got['limit_s']:.1f} s; gate {gate}"
                 + (f" ({got['steps_unmeasured']} steps without a CPU figure (in-process) not counted)" if got["steps_unmeasured"] else "")
                 + (f"; exit {got['exit_code']}" if got["exit_code"] else "")
                 + (f", its report kept in {got['report_kept']}" if "report_kept" in got else ""))
        rows.append(got)
    wall, limit = sum(r["wall_s"] for r in rows), sum(r["limit_s"] for r in rows)
    return {"cores": cores, "suites": rows, "wall_s": round(wall, 2), "limit_s": round(limit, 2),
            "gate": round(wall / limit, 2) if limit > 0 else None}
