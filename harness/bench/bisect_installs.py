"""What a bisection installs: `harness bisect` over real Claude Code releases into an empty tools folder.

The promise is that a bisection installs only the releases it tests, and
tests about log2 of the range: the two ends, then one per halving. An empty
tools folder makes every tested release a real install from the registry, so
the figure counts installs, not cache hits (the scratch folder, several
hundred MB per release, is removed afterwards).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

SCENARIO = "scenarios/claude-code/wrong-answer-then-retry.yaml"
RANGE = "claude-code@{old}..{new}+append-first-launch-only"
FULL, QUICK = ("2.1.236", "2.1.332"), ("2.1.265", "2.1.270")  # the measured boundary lies at 2.1.268 in both


def measure(scratch: Path, checkout: Path, quick: bool, progress: Callable[[str], None]) -> dict:
    old, new = QUICK if quick else FULL
    spec = RANGE.format(old=old, new=new)
    tools, out = scratch / "bisect-tools", scratch / "bisect-report"
    env = dict(os.environ, HARNESS_TOOLS_DIR=str(tools))
    progress(f"harness bisect {SCENARIO} --target '{spec}', every release installed into an empty tools folder")
    started = time.perf_counter()
    done = subprocess.run([str(Path(sys.executable).parent / "harness"), "bisect", SCENARIO, "--target", spec,
                           "--report-dir", str(out), "--quiet"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0 or not (out / "bisect.json").is_file():
        raise RuntimeError(f"harness bisect exited {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
    record = json.loads((out / "bisect.json").read_text())
    n = record["candidates"]
    got = {"range": spec, "releases": n, "installed": len(record["installed"]), "tested": len(record["tested"]),
           "skipped": len(record["skipped"]), "log2_n": math.ceil(math.log2(n)),
           "bound": 2 + math.ceil(math.log2(n - 1)), "first_changed": record["first_changed"],
           "last_unchanged": record["last_unchanged"], "wall_s": round(wall, 1)}
    progress(f"→ {got['installed']} releases installed for {n} ({got['tested']} tested; ⌈log2 n⌉ = {got['log2_n']}, "
             f"bound {got['bound']} with the two ends): first changed {got['first_changed']}, {wall:.0f} s")
    return got
