"""A step's cpu_s is the agent process's own CPU time, as the kernel counted it: the figure `make bench`'s gate
divides make run's wall time by. A step that burns CPU shows it; one that sleeps as long does not."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WRAPPER = '''\
import os, sys, time
mode, agent = sys.argv[1], sys.argv[2:]
if mode == "burn":  # half a second of this process's own CPU, however busy the machine
    while time.process_time() < 0.5:
        pass
else:
    time.sleep(0.6)
os.execv(agent[0], agent)
'''


def test_cpu_time_is_the_agents_own(tmp_path):
    (tmp_path / "wrap.py").write_text(WRAPPER)
    agent = ["{python}", "-m", "harness.reference_agent", "--output-format", "json", "-p", "{prompt}"]
    (tmp_path / "t.yaml").write_text(textwrap.dedent(f"""\
        name: wrapped
        launch: {json.dumps(["{python}", "{target_dir}/wrap.py", "burn"] + agent)}
        resume: {json.dumps(["{python}", "{target_dir}/wrap.py", "sleep"] + agent + ["--resume", "{session_id}"])}
        session_id: {{stdout_json: session_id}}
        env: {{PYTHONPATH: "{ROOT}"}}
        """))
    (tmp_path / "s.yaml").write_text("name: s\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: a, reply: A}\n  - resume: {prompt: b, reply: B}\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "harness", "run", str(tmp_path / "s.yaml"), "--target",
                           str(tmp_path / "t.yaml"), "--report-dir", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    burn, sleep = json.loads((out / "results.json").read_text())["runs"][0]["steps"]
    assert burn["cpu_s"] >= 0.5, burn
    assert sleep["duration_s"] >= 0.6 and sleep["cpu_s"] < sleep["duration_s"] - 0.4, sleep
