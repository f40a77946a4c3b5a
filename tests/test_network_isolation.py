"""Every step in a network namespace of its own: the fake API at the same address, nothing else reachable.

Real processes in real namespaces (harness/isolation/netns.py): an agent written here
reaches the fake API at its usual base URL, while its direct connections to
another host fail at once with "network unreachable" and one to a port the test
listens on in the host's loopback is refused (a different loopback), and the
step's notes count those failures. The journal keeps naming each request's
sending process. Where namespaces are unavailable (made so for real here: the
launcher runs where the kernel refuses them) and with HARNESS_NETNS=off, steps
run as before and their notes say so. A launcher that fails, dies or stalls
before it becomes the agent fails the step with the cause, within the handshake
timeout. A hung agent in a namespace is killed with its whole process group.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

import harness
import harness.isolation.process
from harness.isolation import netns
from harness.fakeapi.core import FakeModelAPI
from harness.journal.exchange import MAIN, OUTBOUND
from harness.journal.requests import Journal, read_journal
from harness.fakeapi.server import FakeAPIServer
from harness.isolation.process import run_process
from harness.results import ERROR, RunResult
from harness.scenario.reader import scenario_from_text
from harness.targets.target_file import load_target_file

OUTSIDE_V4 = ("10.255.255.1", 80)  # unroutable from a namespace with only lo
OUTSIDE_V6 = ("2001:db8::1", 80, 0, 0)  # documentation prefix
UNAVAILABLE = "network namespaces unavailable here: "
PROXY_ONLY = "outbound traffic only caught through the proxy variables"
MY_NETNS = os.readlink("/proc/self/ns/net")

AGENT = r'''
"""A stdlib agent for tests/test_network_isolation.py: argv is MODE STEP [TARGETS]."""
import errno, json, os, signal, socket, subprocess, sys, time, urllib.error, urllib.request
from pathlib import Path

HOME = Path(os.environ["HOME"])
mode, step = sys.argv[1], sys.argv[2]


def record(name, data):
    (HOME / name).write_text(json.dumps(data))


def connect(target):
    """A direct TCP connection, as a client that ignores the proxy variables would make."""
    host, port = target.rsplit(":", 1)
    family, address = (socket.AF_INET6, (host.strip("[]"), int(port), 0, 0)) if host.startswith("[") else (socket.AF_INET, (host, int(port)))
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        return {"outcome": "no-socket:" + errno.errorcode.get(exc.errno, str(exc.errno))}
    sock.settimeout(5)
    started = time.monotonic()
    code = sock.connect_ex(address)
    sock.close()
    return {"outcome": errno.errorcode.get(code, str(code)) if code else "connected", "seconds": time.monotonic() - started}


if mode in ("hang", "stubborn"):
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child across exec
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record("pids.json", {"agent": os.getpid(), "child": child.pid, "netns": os.readlink("/proc/self/ns/net"),
                         "child_netns": os.readlink(f"/proc/{child.pid}/ns/net")})
    print("agent: working...", file=sys.stderr, flush=True)
    while True:
        time.sleep(60)

body = {"model": "m", "max_tokens": 16, "system": "You are NetProbe.", "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-api-key": os.environ["ANTHROPIC_API_KEY"]})
with urllib.request.urlopen(request, timeout=20) as response:
    seen = {"api_status": response.status, "pid": os.getpid(), "uid": os.getuid(), "netns": os.readlink("/proc/self/ns/net")}

if mode == "probe":
    try:  # through the proxy variables, as a well-behaved client: journaled and refused by the fake API
        urllib.request.urlopen("http://example.invalid/telemetry", timeout=10)
    except urllib.error.HTTPError as exc:
        seen["proxied"] = exc.code
    for name in [n for n in os.environ if n.lower() in ("http_proxy", "https_proxy", "all_proxy")]:
        del os.environ[name]
    seen["attempts"] = {target: connect(target) for target in sys.argv[3].split(",") if target}
if mode == "transparency":  # after first.sh, which recorded what an interpreter would hide (signals, environment)
    umask = os.umask(0)
    seen.update(
        leader=(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid()),
        cwd=os.getcwd(), umask=umask, argv=sys.argv, stdin=os.readlink("/proc/self/fd/0"),
        fds={fd: os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")},
        first={name: (HOME / name).read_text(errors="replace") for name in ("signals.txt", "environ.txt")},
    )
record(f"seen-{step}.json", seen)
print(json.dumps({"session_id": "netprobe-session", "result": "ok"}))
'''


# The transparency test's first program: a shell, which changes neither signals nor the environment it got.
# Its signals are read with builtins only: a forked reader could catch the shell inside its own fork, all blocked.
FIRST = """\
while IFS= read -r line; do case $line in SigIgn*|SigBlk*) echo "$line";; esac; done < /proc/$$/status > "$HOME/signals.txt"
tr '\\0' '\\n' < /proc/$$/environ | sort > "$HOME/environ.txt"
exec "$@"
"""


def target(tmp_path: Path, mode: str, *extra: str, timeout_s: float = 20):
    (tmp_path / "netprobe.py").write_text(AGENT)
    (tmp_path / "first.sh").write_text(FIRST)
    args = ", ".join(json.dumps(a) for a in extra)
    tail = f", {args}" if args else ""
    first = '"/bin/sh", "{target_dir}/first.sh", ' if mode == "transparency" else ""
    path = tmp_path / f"netprobe-{mode}.yaml"
    path.write_text(
        f"name: netprobe-{mode}\n"
        f'launch: [{first}"{{python}}", "{{target_dir}}/netprobe.py", {mode}, "1"{tail}]\n'
        f'resume: [{first}"{{python}}", "{{target_dir}}/netprobe.py", {mode}, "2"{tail}]\n'
        "session_id: {stdout_json: session_id}\n"
        f"timeout_s: {timeout_s}\n"
    )
    return load_target_file(path)


def scenario(steps: int = 1):
    lines = ['  - launch: {prompt: "one", reply: "One."}', '  - resume: {prompt: "two", reply: "Two."}'][:steps]
    return scenario_from_text("name: netns\nchecks: [identity_stable]\nsteps:\n" + "\n".join(lines) + "\n")


def home(result: RunResult) -> Path:
    assert result.workspace, "the run was not asked to keep its workspace"
    return Path(result.workspace) / "home"


def seen(result: RunResult, step: int) -> dict:
    return json.loads((home(result) / f"seen-{step}.json").read_text())


def contacts(listener: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def isolation_notes(step) -> list[str]:
    return [n for n in step.notes if n.startswith(("network", UNAVAILABLE))]


NO_NAMESPACES = r'''
"""Runs argv where the kernel refuses new network and user namespaces (ENOSPC), as a locked-down machine does.

Inside a user namespace of its own, whose limits it may set: its root lowers both to zero, then execs.
"""
import ctypes, os, sys
uid, gid = os.geteuid(), os.getegid()
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
    sys.exit("no-namespaces wrapper: cannot create a user namespace: " + os.strerror(ctypes.get_errno()))
for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
    with open(f"/proc/self/{name}", "w") as handle:
        handle.write(text)
for limit in ("max_net_namespaces", "max_user_namespaces"):
    with open(f"/proc/sys/user/{limit}", "w") as handle:
        handle.write("0")
os.execv(sys.argv[1], sys.argv[1:])
'''


@pytest.fixture
def no_namespaces(tmp_path, monkeypatch):
    """Makes the launcher run where unshare is refused; `forget_probe` also drops the cached probe."""
    wrapper = tmp_path / "no_namespaces.py"
    wrapper.write_text(NO_NAMESPACES)

    def apply(forget_probe: bool) -> None:
        monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, str(wrapper), *netns.LAUNCHER])
        if forget_probe:
            monkeypatch.setattr(netns, "_probe_result", None)

    return apply


@pytest.fixture
def per_step_launcher(monkeypatch):
    """The per-step launcher's own failures: where root has a run's shared namespace (harness/isolation/run_netns.py)
    the launcher still serves steps with private directories and the user namespace fallback."""
    monkeypatch.setattr(netns, "PER_RUN", False)


@pytest.fixture(autouse=True)
def switch_unset(monkeypatch):
    monkeypatch.delenv(netns.SWITCH, raising=False)


@pytest.fixture
def namespaces():
    """The tests of the isolation itself fail here, with the reason, on a machine that refuses namespaces."""
    can = netns.availability()
    if not can.available:
        pytest.fail(f"this machine refuses network namespaces ({can.reason}); steps run with a note saying so, "
                    "and these tests of the isolation itself cannot pass here")
    return can


def test_the_probe_runs_once_per_process(namespaces, monkeypatch):
    monkeypatch.setattr(netns, "LAUNCHER", ["/nonexistent/python"])  # a second probe would fail
    assert netns.availability() is namespaces


# --------------------------------------------------------------------------- the isolation itself


def test_a_step_reaches_the_fake_api_and_nothing_else(run, tmp_path, bystander, namespaces):
    port = bystander.getsockname()[1]
    targets = [f"{OUTSIDE_V4[0]}:{OUTSIDE_V4[1]}", f"127.0.0.1:{port}", f"[{OUTSIDE_V6[0]}]:{OUTSIDE_V6[1]}"]
    result = run(scenario(2), target(tmp_path, "probe", ",".join(targets)), keep=True)
    assert result.error is None, result.error
    journal = read_journal(Path(result.journal))
    pids = []
    for step in result.steps:
        agent = seen(result, step.index)
        pids.append(agent["pid"])
        assert agent["api_status"] == 200 and agent["proxied"] == 403
        assert agent["netns"] != MY_NETNS  # a namespace of its own ...
        attempts = agent["attempts"]
        assert attempts[targets[0]]["outcome"] == "ENETUNREACH"  # ... where nothing is routed ...
        assert attempts[targets[1]]["outcome"] == "ECONNREFUSED"  # ... and loopback is another loopback
        assert attempts[targets[2]]["outcome"] in ("ENETUNREACH", "no-socket:EAFNOSUPPORT")
        assert all(a.get("seconds", 0) < 1 for a in attempts.values()), attempts  # failed at once, no timeout
        # the journal names the agent as the sender of its requests, the main one and the one to another host
        assert step.classes == {MAIN: 1, OUTBOUND: 1}
        assert step.pids == [agent["pid"]]
        assert [(e.klass, e.pid) for e in journal if e.step == step.index] == [(MAIN, agent["pid"]), (OUTBOUND, agent["pid"])]
        # and the step's notes say what failed inside; no word of any fallback
        no_route = sum(a["outcome"] == "ENETUNREACH" for a in attempts.values())
        assert isolation_notes(step) == [
            f"network namespace: {no_route} direct attempt(s) to reach another host failed at once "
            "(no route; DNS lookups included); 1 TCP connection attempt(s) to another loopback port refused"
        ], step.notes
        assert not any(UNAVAILABLE in n or PROXY_ONLY in n for n in step.notes)
    assert len(set(pids)) == 2  # a fresh process per step
    assert contacts(bystander) == 0


def test_each_request_is_looked_up_in_its_own_namespace_even_with_equal_port_numbers(tmp_path, namespaces):
    """A host connection from port P and a namespaced one from the same port P: each journaled with its own sender."""
    (tmp_path / "same_port.py").write_text(
        "import json, os, socket, sys\n"
        "sock = socket.socket()\n"
        "sock.bind(('127.0.0.1', int(sys.argv[1])))\n"
        "sock.connect(('127.0.0.1', int(sys.argv[2])))\n"
        "sock.sendall(b'POST /v1/messages HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\n'\n"
        "             b'content-length: 2\\r\\n\\r\\n{}')\n"
        "print(sock.recv(65536).split(b'\\r\\n')[0].decode(), os.getpid())\n"
    )
    journal = Journal(tmp_path / "journal.jsonl")
    api = FakeModelAPI(journal)
    with FakeAPIServer(api) as server:
        host_side = socket.create_connection(("127.0.0.1", server.port))  # stays open: its port is in the host's table
        client_port = host_side.getsockname()[1]
        api.begin_step(scenario().steps[0])
        with netns.isolated_step([sys.executable, str(tmp_path / "same_port.py"), str(client_port), str(server.port)],
                                 server) as isolation:
            outcome = run_process(isolation.argv, {"PATH": os.environ["PATH"]}, tmp_path, 20, tmp_path / "out",
                                  tmp_path / "err", on_start=api.set_step_pid, pass_fds=isolation.pass_fds)
        api.end_step()
        assert (outcome.exit_code, isolation.error) == (0, None), (tmp_path / "err").read_text()
        status_line, agent_pid = (tmp_path / "out").read_text().rsplit(" ", 1)
        assert status_line.startswith("HTTP/1.1 ") and int(agent_pid) == outcome.pid
        host_side.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        assert host_side.recv(65536).startswith(b"HTTP/1.1 ")
        host_side.close()
    journal.close()
    assert [e.pid for e in api.journal.exchanges()] == [outcome.pid, os.getpid()]


def test_the_launcher_is_invisible_to_the_agent(run, tmp_path, monkeypatch, namespaces):
    """Same environment (no LC_CTYPE from the launcher's interpreter), signals, fds, process group and session as without."""
    for name in [n for n in os.environ if n == "LANG" or n.startswith("LC_")]:
        monkeypatch.delenv(name)  # the C locale: where Python would coerce LC_CTYPE into its environment
    tg = target(tmp_path, "transparency", "--flag", "two words")
    isolated = run(scenario(), tg, keep=True)
    monkeypatch.setenv(netns.SWITCH, "off")
    plain = run(scenario(), tg, keep=True)
    assert isolated.error is None and plain.error is None, (isolated.error, plain.error)

    def normalised(result: RunResult) -> dict:
        agent = seen(result, 1)
        root = str(Path(result.workspace))
        port = re.search(r"ANTHROPIC_BASE_URL=http://127.0.0.1:(\d+)", agent["first"]["environ.txt"]).group(1)
        text = json.dumps({k: v for k, v in agent.items() if k not in ("pid", "netns")})
        return json.loads(text.replace(root, "ROOT").replace(f"127.0.0.1:{port}", "127.0.0.1:PORT"))

    assert normalised(isolated) == normalised(plain)
    agent = seen(isolated, 1)
    assert agent["netns"] != MY_NETNS and seen(plain, 1)["netns"] == MY_NETNS
    first = agent["first"]
    assert "LC_CTYPE=" not in first["environ.txt"] and "ANTHROPIC_BASE_URL=" in first["environ.txt"]
    ignored = int(re.search(r"SigIgn:\s*([0-9a-f]+)", first["signals.txt"]).group(1), 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1)), first["signals.txt"]
    assert sorted(agent["fds"]) == ["0", "1", "2"], agent["fds"]  # stdio only: neither the listener nor the channel
    assert agent["leader"] == [True, True]  # the launcher's pid, group and session are the agent's
    assert agent["argv"][1:] == ["transparency", "1", "--flag", "two words"]


# --------------------------------------------------------------------------- a hung agent


@pytest.mark.parametrize("mode", ["hang", "stubborn"])
def test_a_hung_agent_in_a_namespace_is_killed_with_its_whole_group(run, tmp_path, monkeypatch, mode, namespaces):
    monkeypatch.setattr(harness.isolation.process, "GRACE_S", 0.3)
    result = run(scenario(), target(tmp_path, mode, timeout_s=1), keep=True)
    assert result.status == ERROR
    assert result.error.startswith("step 1 (launch): timed out after 1s; its process group was killed"), result.error
    step = result.steps[0]
    assert step.timed_out and 0.9 <= step.duration_s < 5
    pids = json.loads((home(result) / "pids.json").read_text())
    assert pids["netns"] == pids["child_netns"] != MY_NETNS
    for pid in (pids["agent"], pids["child"]):
        assert_dead(pid)
    assert in_session(pids["agent"]) == []  # nothing of the step's session left anywhere


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def assert_dead(pid: int) -> None:
    deadline = time.monotonic() + 3
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid), f"process {pid} is still running"


def in_session(sid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


# --------------------------------------------------------------------------- when it cannot be had


def test_without_namespaces_the_notes_say_so_and_the_proxy_still_catches(run, tmp_path, bystander, no_namespaces):
    if netns.availability().available:
        no_namespaces(forget_probe=True)  # made unavailable for real: the kernel refuses, the probe finds out
    can = netns.availability()
    assert not can.available and can.reason, can
    port = bystander.getsockname()[1]
    result = run(scenario(2), target(tmp_path, "probe", f"127.0.0.1:{port}"), keep=True)
    assert result.error is None, result.error
    for step in result.steps:
        agent = seen(result, step.index)
        (note,) = isolation_notes(step)
        assert note == f"{UNAVAILABLE}{can.reason}; {PROXY_ONLY}"
        assert agent["netns"] == MY_NETNS
        # the proxy variables still lead a well-behaved client to the fake API, which journals and refuses ...
        assert agent["proxied"] == 403 and step.classes == {MAIN: 1, OUTBOUND: 1}
        assert any(n.startswith("1 attempt(s) to reach another host refused: example.invalid") for n in step.notes)
        assert step.pids == [agent["pid"]]
        # ... while a direct connection gets through: what the namespace is for
        assert agent["attempts"][f"127.0.0.1:{port}"]["outcome"] == "connected"
    assert contacts(bystander) == 2


def test_harness_netns_off_runs_without_a_namespace_and_says_so(run, tmp_path, bystander, monkeypatch):
    monkeypatch.setenv(netns.SWITCH, "off")
    port = bystander.getsockname()[1]
    result = run(scenario(), target(tmp_path, "probe", f"127.0.0.1:{port}"), keep=True)
    assert result.error is None, result.error
    (step,) = result.steps
    assert isolation_notes(step) == [f"network isolation off (HARNESS_NETNS=off): {PROXY_ONLY}"]
    agent = seen(result, 1)
    assert agent["netns"] == MY_NETNS and agent["attempts"][f"127.0.0.1:{port}"]["outcome"] == "connected"
    assert step.pids == [agent["pid"]]
    assert contacts(bystander) == 1


# --------------------------------------------------------------------------- a launcher that fails before exec


def test_unshare_refused_at_run_time_fails_the_step_with_the_cause(run, tmp_path, no_namespaces, namespaces,
        per_step_launcher):
    # probed (and cached) as available ...
    no_namespaces(forget_probe=False)  # ... then refused when the step starts
    started = time.monotonic()
    result = run(scenario(2), target(tmp_path, "probe", ""), keep=True)
    assert result.error == (
        "step 1 (launch): could not isolate the step's network: unshare(CLONE_NEWNET): No space left on device; "
        "unshare(CLONE_NEWUSER|CLONE_NEWNET): No space left on device (the agent was not started)"
    ), result.error
    step = result.steps[0]
    assert step.exit_code == 125 and step.requests == 0 and len(result.steps) == 1
    assert "harness.isolation.netns: unshare(CLONE_NEWNET): No space left on device" in step.stderr_tail
    assert not (home(result) / "seen-1.json").exists()
    assert time.monotonic() - started < 10


def test_a_launcher_that_dies_before_handing_over_fails_the_step(run, tmp_path, monkeypatch, namespaces,
        per_step_launcher):
    monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, "-c", "import sys; sys.exit(3)"])
    result = run(scenario(), target(tmp_path, "probe", ""), keep=True)
    assert result.error == ("step 1 (launch): could not isolate the step's network: the launcher exited before "
                            "handing over its listener (the agent was not started)"), result.error
    assert result.steps[0].exit_code == 3 and not (home(result) / "seen-1.json").exists()


def test_a_launcher_that_never_hands_over_is_killed_at_the_handshake_timeout(run, tmp_path, monkeypatch, namespaces,
        per_step_launcher):
    pid_file = tmp_path / "stalled.pid"
    stall = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, "-c", stall])
    monkeypatch.setattr(netns, "HANDSHAKE_TIMEOUT_S", 0.5)
    started = time.monotonic()
    result = run(scenario(), target(tmp_path, "probe", "", timeout_s=60))
    assert result.error == ("step 1 (launch): could not isolate the step's network: the launcher did not hand over "
                            "its listener within 0.5s; the step was killed"), result.error
    assert time.monotonic() - started < 10 and not result.steps[0].timed_out
    assert_dead(int(pid_file.read_text()))


@pytest.mark.parametrize("switch", ["on", "off"])
def test_a_program_that_cannot_start_is_named_the_same_way_with_or_without(run, tmp_path, monkeypatch, switch):
    if switch == "off":
        monkeypatch.setenv(netns.SWITCH, "off")
    path = tmp_path / "missing.yaml"
    path.write_text('name: missing\nlaunch: ["/nonexistent/bin/no-such-agent", "-p", "{prompt}"]\n'
                    'resume: ["/nonexistent/bin/no-such-agent", "--resume", "{session_id}"]\n'
                    "session_id: {stdout_json: session_id}\n")
    result = run(scenario(), load_target_file(path))
    assert result.error == ("step 1 (launch): cannot start '/nonexistent/bin/no-such-agent': [Errno 2] No such file "
                            "or directory: '/nonexistent/bin/no-such-agent'"), result.error


# --------------------------------------------------------------------------- without root


UNPRIVILEGED_RUN = r'''
import json, sys
from pathlib import Path
from harness.isolation import netns
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets.target_file import load_target_file
folder = Path(sys.argv[1])
sc = scenario_from_text("name: nobody\nchecks: [identity_stable]\nsteps:\n  - launch: {prompt: one, reply: One.}\n")
result = run_scenario(sc, load_target_file(folder / "netprobe-probe.yaml"), folder / "journal.jsonl", keep_workspace=True)
step = result.steps[0]
agent = json.loads((Path(result.workspace) / "home" / "seen-1.json").read_text()) if not result.error else None
print(json.dumps({"availability": netns.availability().__dict__, "error": result.error, "notes": step.notes,
                  "pids": step.pids, "agent": agent}))
'''

def interpreter_for(as_user: dict, env: dict) -> str:
    """This interpreter, or else the system's, if that user may run it with the harness's dependencies."""
    candidates = [sys.executable, shutil.which("python3") or "", "/usr/bin/python3"]
    for python in filter(None, candidates):
        try:
            if subprocess.run([python, "-c", "import yaml, detect_secrets, harness.redaction"], env=env, capture_output=True,
                              **as_user).returncode == 0:
                return python
        except OSError:  # e.g. an interpreter under root's home
            continue
    pytest.fail(f"no Python interpreter that uid {as_user.get('user', os.getuid())} may run with the harness's "
                f"dependencies: {candidates}")


CAN_UNSHARE = ("import ctypes, sys; "
               "sys.exit(0 if ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) == 0 else 1)")


def test_an_unprivileged_harness_gets_a_user_and_network_namespace_keeping_the_agents_uid(bystander):
    """As root, the harness is run as nobody here; the agent keeps that uid, the journal still finds its pid."""
    folder = Path(tempfile.mkdtemp(prefix="harness-netns-nobody-"))
    try:
        folder.chmod(0o777)
        (folder / "run.py").write_text(UNPRIVILEGED_RUN)
        port = bystander.getsockname()[1]
        target(folder, "probe", f"{OUTSIDE_V4[0]}:{OUTSIDE_V4[1]},127.0.0.1:{port}")
        as_user = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
        # The harness and the packages it runs with (this environment's own, readable by anyone here).
        path = os.pathsep.join([str(Path(harness.__file__).resolve().parent.parent), sysconfig.get_paths()["purelib"]])
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": path, "TMPDIR": str(folder), "HOME": str(folder)}
        python = interpreter_for(as_user, env)
        can = subprocess.run([python, "-c", CAN_UNSHARE], env=env, **as_user).returncode == 0
        done = subprocess.run([python, str(folder / "run.py"), str(folder)], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=120, **as_user)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[-1])
        assert report["error"] is None, report
        agent = report["agent"]
        assert agent["uid"] == (65534 if as_user else os.getuid())
        if not can:  # this kernel refuses unprivileged user namespaces: the fallback, said in the notes
            assert report["availability"]["available"] is False
            assert any(n.startswith(UNAVAILABLE) for n in report["notes"]), report
            return
        assert report["availability"] == {"available": True, "how": "user and network namespace", "reason": ""}
        assert agent["netns"] != MY_NETNS and report["pids"] == [agent["pid"]]
        assert [a["outcome"] for a in agent["attempts"].values()] == ["ENETUNREACH", "ECONNREFUSED"]
        assert contacts(bystander) == 0
        assert not any(UNAVAILABLE in n for n in report["notes"])
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


NO_NET_ADMIN = r"""
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(24, 12, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_NET_ADMIN
    sys.exit("cannot drop CAP_NET_ADMIN: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_root_that_may_not_bring_lo_up_gets_a_user_namespace_instead(run, tmp_path, monkeypatch, bystander, namespaces):
    """A container's root: may unshare, but without CAP_NET_ADMIN cannot bring lo up in the new namespace."""
    if os.geteuid() == 0:
        (tmp_path / "no_net_admin.py").write_text(NO_NET_ADMIN)
        monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, str(tmp_path / "no_net_admin.py"), *netns.LAUNCHER])
    monkeypatch.setattr(netns, "_probe_result", None)
    assert netns.availability() == netns.Availability(True, how="user and network namespace")
    port = bystander.getsockname()[1]
    result = run(scenario(), target(tmp_path, "probe", f"127.0.0.1:{port}"), keep=True)
    assert result.error is None, result.error
    agent = seen(result, 1)
    assert agent["netns"] != MY_NETNS and agent["uid"] == os.geteuid()
    assert agent["attempts"][f"127.0.0.1:{port}"]["outcome"] == "ECONNREFUSED" and contacts(bystander) == 0
    assert result.steps[0].pids == [agent["pid"]]
