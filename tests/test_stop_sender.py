"""Who stopped the harness, and that no agent inherits the signals it blocks to find out.

Real harness processes (a small script that stops the way the CLI does:
request_stop, then KeyboardInterrupt) with harness/isolation/stopping.py installed run
a real agent step. The agent reads its own /proc/self/status: nothing blocked,
whichever way the step started (the warden with or without a network
namespace, or straight from the harness where there is no warden). An agent
that finds the harness's pid and sends it SIGTERM is named as the sender; a
SIGTERM from outside is said to come from outside; one sent to the warden (the
agent's parent) stops nothing and is noted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.isolation.process import run_process

AGENT = r'''
import json, os, signal, subprocess, sys, time
from pathlib import Path
HOME = Path(os.environ["HOME"])
mode = sys.argv[1]

def status(pid):
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {line.split(":")[0]: line.split(":")[1].strip() for line in lines if line.startswith(("SigBlk", "SigIgn"))}

def parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

if mode == "masks":
    child = subprocess.Popen(["sleep", "30"])
    (HOME / "masks.json").write_text(json.dumps({"agent": status(os.getpid()), "child": status(child.pid)}))
    child.kill()
    print(json.dumps({"session_id": "masks", "result": "ok"}))
elif mode == "stop-the-harness":  # its parent is the warden; the warden's parent is the harness
    harness = parent_of(os.getppid())
    (HOME / "sender.json").write_text(json.dumps({"agent": os.getpid(), "harness": harness}))
    os.kill(harness, signal.SIGTERM)
    time.sleep(300)
else:  # hang: stopped from outside
    (HOME / "sender.json").write_text(json.dumps({"agent": os.getpid()}))
    time.sleep(300)
'''

HARNESS = r'''
import json, signal, sys
from pathlib import Path
from harness.isolation import lifetime, process, stopping
from harness.run.pool import run_matrix_parallel
from harness.run.runner import Interrupted, run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets.target_file import load_target_file

def stop(signum, frame):  # as harness/cli.py's handler
    process.request_stop()
    raise KeyboardInterrupt

if __name__ == "__main__":  # -n workers import this file again
    folder, mode, how = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if how == "none":  # a warden that exits before it is ready: steps start from the harness itself
        lifetime.WARDEN = [sys.executable, "-c", "pass"]
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    installed = stopping.install()
    scenarios = [scenario_from_text(f"name: {name}\nappend: x\nsteps:\n  - launch: {{prompt: a, reply: A}}\n")
                 for name in ("stops", "also")]
    target = load_target_file(folder / f"{mode}.yaml")
    if how == "-n 2":
        result = run_matrix_parallel(scenarios, [target], [str(folder / f"{mode}.yaml")], None, workers=2)[0]
    else:
        try:
            result = run_scenario(scenarios[0], target, keep_workspace=True)
        except Interrupted as stopped:
            result = stopped.result
    last = stopping.last_stop()
    print(json.dumps({"installed": installed, "stop": last.__dict__ if last else None,
                      "message": stopping.stop_message(), "interrupted": result.interrupted,
                      "workspace": result.workspace, "notes": result.steps[0].notes if result.steps else []}))
'''


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "harness_script.py").write_text(HARNESS)
    for mode in ("masks", "stop-the-harness", "hang"):
        (tmp_path / f"{mode}.yaml").write_text(
            f"name: {mode}\n"
            f'launch: ["{{python}}", "{{target_dir}}/agent.py", "{mode}"]\n'
            f'resume: ["{{python}}", "{{target_dir}}/agent.py", "{mode}"]\n'
            "session_id: {stdout_json: session_id}\ntimeout_s: 120\n")
    (tmp_path / "tmp").mkdir()
    return tmp_path


def start_harness(folder: Path, mode: str, how: str = "serial", **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(folder / "harness_script.py"), str(folder), mode, how],
                            env={**os.environ, "TMPDIR": str(folder / "tmp"), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(harness: subprocess.Popen) -> dict:
    try:
        out, err = harness.communicate(timeout=120)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate()
    assert harness.returncode == 0 and out.strip(), err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("way", ["warden", "warden, HARNESS_NETNS=off", "no warden"])
def test_no_agent_inherits_the_stop_signals_the_harness_blocks(folder, way):
    env = {"HARNESS_NETNS": "off"} if "off" in way else {}
    report = finish(start_harness(folder, "masks", "none" if way == "no warden" else "serial", **env))
    assert report["installed"] is True
    masks = json.loads((Path(report["workspace"]) / "home" / "masks.json").read_text())
    assert masks["agent"]["SigBlk"] == masks["child"]["SigBlk"] == "0000000000000000", masks
    unbound = [note for note in report["notes"] if "not bound to the harness's lifetime" in note]
    if way == "no warden":  # the weaker protection is said: nothing kills the step's processes if the harness dies
        assert unbound and "the step warden could not start" in unbound[0], report["notes"]
    else:
        assert not unbound, report["notes"]


def test_an_agent_that_stops_the_harness_is_named_as_the_sender(folder):
    report = finish(start_harness(folder, "stop-the-harness"))
    sender = json.loads((Path(report["workspace"]) / "home" / "sender.json").read_text())
    assert report["interrupted"] is True
    stop = report["stop"]
    assert (stop["signal"], stop["sender_pid"], stop["from_step"], stop["step_root"]) == (
        "SIGTERM", sender["agent"], True, True), stop
    assert report["message"].startswith(f"stopped by SIGTERM from pid {sender['agent']} (the agent of step 1 (launch): "), report
    assert report["message"].endswith("python agent.py stop-the-harness)"), report["message"]


@pytest.mark.parametrize("how", ["serial", "-n 2"])
def test_a_stop_from_outside_is_said_to_come_from_outside(folder, how):
    """-n 2 as well: starting the workers starts multiprocessing's resource tracker, which unblocks the signals."""
    harness = start_harness(folder, "hang", how)
    try:
        deadline = time.monotonic() + 60
        while len(list((folder / "tmp").glob("harness-*/home/sender.json"))) < (2 if how == "-n 2" else 1):
            assert time.monotonic() < deadline and harness.poll() is None, "the agents did not start"
            time.sleep(0.05)
        time.sleep(0.2)
        harness.send_signal(signal.SIGTERM)
    finally:
        report = finish(harness)
    stop = report["stop"]
    assert (stop["sender_pid"], stop["from_step"]) == (os.getpid(), False), stop
    assert report["message"].startswith(f"stopped by SIGTERM from pid {os.getpid()} (outside the harness: "), report


def test_a_stop_sent_to_the_warden_stops_nothing_and_is_noted(tmp_path):
    """`kill $PPID` from an agent reaches the warden, not the harness: ignored, the step runs to its end."""
    outcome = run_process(["sh", "-c", "kill -TERM $PPID; kill -INT $PPID; sleep 0.5; echo done"],
                          {"PATH": os.environ["PATH"]}, tmp_path, 30, tmp_path / "out", tmp_path / "err")
    assert (outcome.exit_code, (tmp_path / "out").read_text()) == (0, "done\n")
    assert sorted(note.split(" reached ")[0] for note in outcome.notes) == [  # pending signals come lowest first
        f"SIGINT from the step's own process {outcome.pid}", f"SIGTERM from the step's own process {outcome.pid}"]
    assert all("was ignored: a step cannot stop the harness through its parent" in note for note in outcome.notes)
