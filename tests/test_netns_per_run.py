"""One network namespace per run, entered by each step (harness/isolation/run_netns.py): shared by a run's steps only.

Real runs, real namespaces: an agent written here records its network
namespace and tries a listener the test opens on the host's 127.0.0.1 (refused:
another loopback) while the fake API answers it at its usual address. Two
steps of one run are in the same namespace, two runs in different ones, none
in the host's. After the run, and after its harness is SIGKILLed, nothing
holds the namespace any more: no process is in it, no descriptor names it.
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

from harness.isolation import netns
from harness.scenario.reader import scenario_from_text
from harness.targets.target_file import load_target_file

AGENT = r'''
import errno, json, os, socket, sys, time, urllib.request
from pathlib import Path
mode, step, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = {"pid": os.getpid(), "ppid": os.getppid(), "netns": os.stat("/proc/self/ns/net").st_ino}
sock = socket.socket()
sock.settimeout(5)
seen["host_port"] = errno.errorcode.get(sock.connect_ex(("127.0.0.1", port)), "connected")
body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-api-key": os.environ["ANTHROPIC_API_KEY"]},
                                 method="POST")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(request, timeout=20) as response:
        seen["api_status"] = response.status
except OSError as exc:
    seen["api_status"] = str(exc)
(Path(os.environ["HOME"]) / f"seen-{step}.json").write_text(json.dumps(seen))
while mode == "hang":
    time.sleep(60)
print(json.dumps({"session_id": "per-run-session", "result": "ok"}))
'''


def write_target(folder: Path, mode: str, port: int) -> Path:
    (folder / "per_run_agent.py").write_text(AGENT)
    path = folder / f"per-run-{mode}.yaml"
    path.write_text(f"name: per-run-{mode}\n"
                    f'launch: ["{{python}}", "{{target_dir}}/per_run_agent.py", {mode}, "1", "{port}"]\n'
                    f'resume: ["{{python}}", "{{target_dir}}/per_run_agent.py", {mode}, "2", "{port}"]\n'
                    "session_id: {stdout_json: session_id}\ntimeout_s: 30\n")
    return path


SCENARIO = ("name: per-run\nchecks: [identity_stable]\nsteps:\n  - launch: {prompt: one, reply: One.}\n"
            "  - resume: {prompt: two, reply: Two.}\n")


@pytest.fixture(autouse=True)
def shared_namespaces(monkeypatch):
    monkeypatch.delenv(netns.SWITCH, raising=False)
    can = netns.availability()
    if can.how != "network namespace":
        pytest.fail(f"a run's shared namespace needs root's network namespaces here ({can.how or can.reason})")


def seen(result, step: int) -> dict:
    return json.loads((Path(result.workspace) / "home" / f"seen-{step}.json").read_text())


def now_ticks() -> int:
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def holders(inode: int, started_before: int) -> list[str]:
    """Processes in the namespace or holding a descriptor to it (other pytest workers aside: their namespaces may get
    the freed inode number again), among those started before the namespace was gone."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[19]) > started_before:
                    continue
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if int(pid) != os.getpid() and ("pytest" in cmdline or "xdist" in cmdline):
                continue
            if os.stat(f"/proc/{pid}/ns/net").st_ino == inode:
                found.append(f"{pid} in it: {cmdline[:120]}")
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"net:[{inode}]":
                    found.append(f"{pid} holds fd {fd}: {cmdline[:120]}")
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_an_agent_reaches_the_fake_api_and_not_the_hosts_loopback(run, tmp_path, bystander):
    result = run(scenario_from_text(SCENARIO), load_target_file(write_target(tmp_path, "once", bystander.getsockname()[1])),
                 keep=True)
    for step in (1, 2):
        agent = seen(result, step)
        assert agent["host_port"] == "ECONNREFUSED", agent  # the host's listener is on another loopback
        assert agent["api_status"] == 200
        assert agent["netns"] != os.stat("/proc/self/ns/net").st_ino
    assert result.error is None, result.error
    with pytest.raises(BlockingIOError):
        bystander.accept()
    assert any("1 TCP connection attempt(s) to another loopback port refused" in n for n in result.steps[1].notes)


def test_two_steps_of_a_run_share_the_namespace_two_runs_do_not(run, tmp_path, bystander):
    target = load_target_file(write_target(tmp_path, "once", bystander.getsockname()[1]))
    first, second = (run(scenario_from_text(SCENARIO), target, keep=True) for _ in range(2))
    assert first.error is None and second.error is None, (first.error, second.error)
    assert seen(first, 1)["pid"] != seen(first, 2)["pid"]  # a fresh process per step ...
    assert seen(first, 1)["netns"] == seen(first, 2)["netns"]  # ... in the run's namespace
    assert seen(second, 1)["netns"] == seen(second, 2)["netns"]
    assert seen(first, 1)["netns"] != seen(second, 1)["netns"]


def test_nothing_holds_the_namespace_after_the_run(run, tmp_path, bystander):
    result = run(scenario_from_text(SCENARIO), load_target_file(write_target(tmp_path, "once", bystander.getsockname()[1])),
                 keep=True)
    ended = now_ticks()
    assert result.error is None, result.error
    inode = seen(result, 2)["netns"]
    mine = [fd for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")
            and os.readlink(f"/proc/self/fd/{fd}") == f"net:[{inode}]"]
    assert not mine, f"the harness still holds the run's namespace: fds {mine}"
    assert not holders(inode, ended)


def test_a_sigkilled_harness_leaves_nothing_holding_its_namespace(tmp_path, bystander):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    write_target(tmp_path, "hang", bystander.getsockname()[1])
    (tmp_path / "a.yaml").write_text(SCENARIO)
    with (tmp_path / "harness.err").open("w") as err:
        harness = subprocess.Popen([sys.executable, "-m", "harness", "run", "a.yaml", "--target", "per-run-hang.yaml",
                                    "--report-dir", "out", "-q"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err,
                                   env={**os.environ, "TMPDIR": str(scratch)})
    try:
        deadline = time.monotonic() + 60
        while not (found := list(scratch.glob("**/home/seen-1.json"))):
            assert harness.poll() is None and time.monotonic() < deadline, (tmp_path / "harness.err").read_text()
            time.sleep(0.05)
        time.sleep(0.05)
        agent = json.loads(found[0].read_text())
        assert holders(agent["netns"], now_ticks()), "the agent is expected in the namespace before the kill"
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(timeout=30)
        killed = now_ticks()
        deadline = time.monotonic() + 15
        while (left := holders(agent["netns"], killed)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"still holding the killed harness's namespace: {left}"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
