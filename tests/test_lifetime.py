"""A harness killed by SIGKILL leaves nothing running: not its agent, nor the agent's children, nor their daemons.

Real harnesses, killed for real: `harness run` (with and without a network
namespace), `harness run -n 2`, `harness diff` and a pytest session each run a
scenario whose agent starts a child, a grandchild whose parent then exits, and
a double-forked daemon in a session of its own, records every pid, and hangs.
The test SIGKILLs the harness by its pid and then waits, bounded, for every
recorded process to be gone; the dead run's workspace is swept by the next
start. Whatever survives is killed by the test itself (by pid), so a failure
leaves nothing behind either.
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

from harness.isolation.workspace_owner import sweep_stale_workspaces

AGENT = r'''
"""Hangs after starting a child, an orphaned grandchild and a double-forked daemon; their pids go to $HOME."""
import json, os, subprocess, sys, time
from pathlib import Path

child = subprocess.Popen(["sleep", "300"])
grandchild = int(subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], capture_output=True,
                                text=True).stdout)  # its parent, the shell, has exited: an orphan in the step's group
read_end, write_end = os.pipe()
if os.fork() == 0:  # the classic daemon: a session of its own, then a second fork whose parent exits at once
    os.setsid()
    if os.fork() == 0:
        os.write(write_end, str(os.getpid()).encode())
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.close(write_end)
daemon = int(os.read(read_end, 64))
pids = {"agent": os.getpid(), "child": child.pid, "grandchild": grandchild, "daemon": daemon}
(Path(os.environ["HOME"]) / "pids.json").write_text(json.dumps(pids))
print("agent: hanging", file=sys.stderr, flush=True)
while True:
    time.sleep(60)
'''

SCENARIO = "name: {name}\nappend: x\nsteps:\n  - launch: {{prompt: a, reply: A}}\n"


def write_target(folder: Path) -> Path:
    (folder / "hanging_agent.py").write_text(AGENT)
    target = folder / "hanging.yaml"
    target.write_text(
        "name: hanging\n"
        'launch: ["{python}", "{target_dir}/hanging_agent.py", "-p", "{prompt}"]\n'
        'resume: ["{python}", "{target_dir}/hanging_agent.py", "-p", "{prompt}", "--resume", "{session_id}"]\n'
        "session_id: {stdout_json: session_id}\n"
        "timeout_s: 300\n"
    )
    return target


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def wait_for_pids(scratch: Path, count: int, harness: subprocess.Popen, timeout: float = 120) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for path in scratch.glob("harness-*/home/pids.json"):
            try:
                found.append(json.loads(path.read_text()))
            except ValueError:  # being written
                pass
        if len(found) >= count:
            return found
        if harness.poll() is not None:
            raise AssertionError(f"the harness exited ({harness.returncode}) before its agents ran:\n"
                                 f"{harness.err_path.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"{count} agent(s) did not record their pids under {scratch} within {timeout}s")


def assert_all_gone(pids: list[int], timeout: float = 15) -> None:
    """Bounded: each process must be gone within `timeout`; survivors are then killed here, and named."""
    deadline = time.monotonic() + timeout
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in pids if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"still running {timeout:g}s after the harness was killed: {survivors} of {pids}"


_started: list[subprocess.Popen] = []


def start(argv: list[str], cwd: Path, scratch: Path, **env: str) -> subprocess.Popen:
    """Its output to files, not pipes: a pipe would stay open as long as anything that inherited it survives."""
    with (cwd / "harness.out").open("w") as out, (cwd / "harness.err").open("w") as err:
        harness = subprocess.Popen(argv, cwd=cwd, env={**os.environ, "TMPDIR": str(scratch), **env},
                                   stdout=out, stderr=err, text=True)
    harness.err_path = cwd / "harness.err"
    _started.append(harness)
    return harness


@pytest.fixture(autouse=True)
def no_harness_left():
    """A test that fails before its kill still kills its harness (whose warden then ends its agents)."""
    yield
    while _started:
        harness = _started.pop()
        if harness.poll() is None:
            harness.kill()
        harness.wait()


def kill_and_check(harness: subprocess.Popen, scratch: Path, agents: int, also: list[int] = ()) -> None:
    records = wait_for_pids(scratch, agents, harness)
    pids = [pid for record in records for pid in record.values()] + list(also)
    assert all(map(alive, pids)), f"not all running before the kill: {records}"
    os.kill(harness.pid, signal.SIGKILL)
    assert harness.wait(timeout=60) == -signal.SIGKILL
    assert_all_gone(pids)
    left = sorted(path.name for path in scratch.glob("harness-*"))
    assert left, "the killed run's workspace is expected in its temporary folder until the next start sweeps it"
    swept = subprocess.run([sys.executable, "-c", "from harness.isolation.workspace_owner import sweep_stale_workspaces as s; "
                            "print(len(s()))"], env={**os.environ, "TMPDIR": str(scratch)}, capture_output=True,
                           text=True, check=True)
    assert int(swept.stdout) == len(left) and not list(scratch.glob("harness-*")), (left, swept)


@pytest.fixture
def folder(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    write_target(tmp_path)
    return tmp_path, scratch


@pytest.mark.parametrize("netns", ["namespace", "HARNESS_NETNS=off"])
def test_a_sigkilled_harness_run_leaves_no_process_of_its_step(folder, netns):
    tmp_path, scratch = folder
    (tmp_path / "a.yaml").write_text(SCENARIO.format(name="a"))
    env = {"HARNESS_NETNS": "off"} if netns != "namespace" else {}
    harness = start([sys.executable, "-m", "harness", "run", "a.yaml", "--target", "hanging.yaml",
                     "--report-dir", "out", "-q"], tmp_path, scratch, **env)
    kill_and_check(harness, scratch, agents=1)


def test_a_sigkilled_parallel_run_ends_its_workers_and_their_agents(folder):
    tmp_path, scratch = folder
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(SCENARIO.format(name=name))
    harness = start([sys.executable, "-m", "harness", "run", "a.yaml", "b.yaml", "-n", "2", "--target", "hanging.yaml",
                     "--report-dir", "out", "-q"], tmp_path, scratch)
    wait_for_pids(scratch, 2, harness)
    workers = [pid for pid in children_of(harness.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert len(workers) == 2, workers
    kill_and_check(harness, scratch, agents=2, also=workers)


def test_a_sigkilled_harness_diff_leaves_no_process_of_its_step(folder):
    tmp_path, scratch = folder
    (tmp_path / "a.yaml").write_text(SCENARIO.format(name="a"))
    harness = start([sys.executable, "-m", "harness", "diff", "a.yaml", "-b", "hanging.yaml", "-c", "hanging.yaml",
                     "--report-dir", "out", "-q"], tmp_path, scratch)
    kill_and_check(harness, scratch, agents=1)


def test_a_sigkilled_pytest_session_leaves_no_process_of_its_items(folder):
    tmp_path, scratch = folder
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "a.yaml").write_text(SCENARIO.format(name="a"))
    harness = start([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "scenarios/a.yaml",
                     "--harness-target", "hanging.yaml"], tmp_path, scratch)
    kill_and_check(harness, scratch, agents=1)


def test_the_sweep_removes_only_workspaces_whose_owner_is_dead(tmp_path):
    """Live owners (this process), kept ones and unmarked folders stay; a dead owner's and a reused pid's go."""
    from harness.isolation.workspace import Workspace

    live = Workspace.create("live", tmp_path)
    kept = Workspace.create("kept", tmp_path, keep=True)
    unmarked = tmp_path / "harness-unmarked-x"
    unmarked.mkdir()
    dead = Workspace.create("dead", tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (dead.root / ".harness-owner").write_text((live.root / ".harness-owner").read_text().replace(
        f"{os.getpid()} ", f"{int(gone.stdout)} ", 1))  # a process that has exited
    reused = Workspace.create("reused", tmp_path)
    mark = (reused.root / ".harness-owner").read_text().split()
    (reused.root / ".harness-owner").write_text(f"{mark[0]} {int(mark[1]) - 1} {mark[2]}\n")  # this pid, another start
    assert sorted(p.name for p in sweep_stale_workspaces([tmp_path])) == sorted([dead.root.name, reused.root.name])
    assert live.root.is_dir() and kept.root.is_dir() and unmarked.is_dir()
    assert not dead.root.exists() and not reused.root.exists()
