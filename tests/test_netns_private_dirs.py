"""A step's private /var/tmp: what it writes there stays out of the host's (harness/isolation/netns.py, `private_dirs`).

Real processes in real namespaces, driven as the runner drives a step
(isolated_step around run_process, with a FakeAPIServer): the agent writes
/var/tmp/<a unique name>, which lands in the bound directory and never in the
host's /var/tmp, and it still reaches the fake API, which journals it. A bind
that cannot be made fails the step, naming the path, before the agent runs.
Nothing propagates back, even where / is a shared mount (systemd's default;
made so here inside a mount namespace of the test's own); the user-namespace
way gets the same. Off or unavailable: the step runs as before, with a note.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from harness.isolation import netns
from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.isolation.process import run_process
from harness.scenario.reader import scenario_from_text
from test_network_isolation import namespaces, switch_unset  # noqa: F401 - the same fixtures: namespaces required, switch unset

SCENARIO = scenario_from_text("name: private\nchecks: [identity_stable]\nsteps:\n  - launch: {prompt: one, reply: One.}\n")
HOST_NS = {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in ("net", "mnt", "user")}

AGENT = r'''
"""Writes /var/tmp/NAME; with a base URL, also asks the fake API; prints what it saw as JSON."""
import json, os, sys, urllib.request
name, base_url = sys.argv[1], sys.argv[2]
with open(os.path.join("/var/tmp", name), "w") as handle:
    handle.write("written by the agent")
seen = {"pid": os.getpid(), "ns": {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in ("net", "mnt", "user")},
        "var_tmp": sorted(os.listdir("/var/tmp"))}
if base_url:
    body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "one"}]}
    request = urllib.request.Request(base_url + "/v1/messages", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", "x-api-key": "k"})
    with urllib.request.urlopen(request, timeout=20) as response:
        seen["api_status"] = response.status
print(json.dumps(seen))
'''

# Makes / a shared mount in a mount namespace of its own (as systemd does on most hosts), runs the launcher as a
# child there, and afterwards reports that namespace's mounts at /var/tmp: any would have propagated from the step's.
SHARED_ROOT = r'''
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
if libc.unshare(0x00020000) != 0 or libc.mount(None, b"/", None, 0x4000 | 0x100000, None) != 0:  # MS_REC|MS_SHARED
    sys.exit("shared-root wrapper: " + os.strerror(ctypes.get_errno()))
report, argv = sys.argv[1], sys.argv[2:]
child = os.fork()
if child == 0:
    os.execv(argv[0], argv)
os.closerange(3, 1 << 16)  # the launcher's channel: the harness sees end of file once the launcher execs
_, status = os.waitpid(child, 0)
with open("/proc/self/mountinfo") as handle:
    mounts = [line.split()[4] for line in handle]
with open(report, "w") as handle:
    json.dump({"var_tmp_mounts": mounts.count("/var/tmp")}, handle)
sys.exit(os.waitstatus_to_exitcode(status))
'''

NO_NET_ADMIN = r"""
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(24, 12, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_NET_ADMIN
    sys.exit("cannot drop CAP_NET_ADMIN: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
"""




@pytest.fixture
def name():
    """A name no one else writes in /var/tmp; removed from the host's afterwards, should a broken step leave it."""
    unique = f"harness-private-{uuid.uuid4().hex}"
    yield unique
    Path("/var/tmp", unique).unlink(missing_ok=True)


@pytest.fixture
def served(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    api = FakeModelAPI(journal)
    with FakeAPIServer(api) as server:
        yield api, server
    journal.close()


def var_tmp_mounts() -> list[str]:
    with open("/proc/self/mountinfo") as handle:
        return [line for line in handle if line.split()[4] == "/var/tmp"]


def step(tmp_path: Path, served, name: str, private_dirs, with_api: bool = False):
    """One step as the runner runs it: (outcome, isolation, what the agent printed or None, its stderr)."""
    api, server = served
    (tmp_path / "agent.py").write_text(AGENT)
    argv = [sys.executable, str(tmp_path / "agent.py"), name, server.base_url if with_api else ""]
    api.begin_step(SCENARIO.steps[0])
    try:
        with netns.isolated_step(argv, server, private_dirs) as isolation:
            outcome = run_process(isolation.argv, {"PATH": os.environ["PATH"]}, tmp_path, 20, tmp_path / "out",
                                  tmp_path / "err", on_start=api.set_step_pid, pass_fds=isolation.pass_fds)
    finally:
        api.end_step()
    out = (tmp_path / "out").read_text()
    return outcome, isolation, json.loads(out) if out.strip() else None, (tmp_path / "err").read_text()


def test_what_a_step_writes_in_var_tmp_lands_in_the_bound_directory_not_the_hosts(tmp_path, served, name, namespaces):
    private = tmp_path / "var-tmp"
    private.mkdir()
    before = var_tmp_mounts()
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": private})
    assert (outcome.exit_code, isolation.error) == (0, None), err
    assert (private / name).read_text() == "written by the agent"
    assert not Path("/var/tmp", name).exists()
    assert seen["var_tmp"] == [name]  # the agent saw the bound directory only, none of the host's /var/tmp
    assert seen["ns"]["mnt"] != HOST_NS["mnt"] and seen["ns"]["net"] != HOST_NS["net"]
    assert seen["ns"]["user"] == HOST_NS["user"] or os.geteuid() != 0  # as root: no user namespace needed
    assert var_tmp_mounts() == before  # the bind stayed in the step's mount namespace
    assert f"private /var/tmp: bound to {private}" in isolation.notes, isolation.notes


def test_the_fake_api_is_reachable_and_journaled_with_private_dirs(tmp_path, served, name, namespaces):
    private = tmp_path / "var-tmp"
    private.mkdir()
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": private}, with_api=True)
    assert (outcome.exit_code, isolation.error) == (0, None), err
    assert seen["api_status"] == 200 and seen["pid"] == outcome.pid
    assert [e.pid for e in served[0].journal.exchanges()] == [outcome.pid]  # the request, from the agent
    assert (private / name).exists() and not Path("/var/tmp", name).exists()


def test_a_missing_source_fails_the_step_naming_it_and_never_runs_the_agent(tmp_path, served, name, namespaces):
    missing = tmp_path / "no-such-dir"
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": missing}, with_api=True)
    assert isolation.error == (f"could not make /var/tmp private to the step: cannot bind {missing} over /var/tmp: "
                               "[Errno 2] No such file or directory (the agent was not started)"), isolation.error
    assert outcome.exit_code == 125 and seen is None
    assert f"harness.isolation.netns: cannot bind {missing} over /var/tmp" in err
    assert not Path("/var/tmp", name).exists() and not missing.exists()
    assert served[0].journal.exchanges() == []
    assert not any(note.startswith("private ") for note in isolation.notes)


def test_nothing_propagates_back_even_where_the_root_mount_is_shared(tmp_path, served, name, monkeypatch, namespaces):
    private, report = tmp_path / "var-tmp", tmp_path / "outer.json"
    private.mkdir()
    (tmp_path / "shared_root.py").write_text(SHARED_ROOT)
    monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, str(tmp_path / "shared_root.py"), str(report),
                                            *netns.LAUNCHER])
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": private})
    assert (outcome.exit_code, isolation.error) == (0, None), err
    assert (private / name).exists() and seen["var_tmp"] == [name]
    assert json.loads(report.read_text()) == {"var_tmp_mounts": 0}  # the bind did not reach the outer namespace


def test_the_user_namespace_way_gets_a_private_var_tmp_too(tmp_path, served, name, monkeypatch, namespaces):
    """Root without CAP_NET_ADMIN (a container's) falls back to a user namespace: the mounts come along with it."""
    if os.geteuid() == 0:
        (tmp_path / "no_net_admin.py").write_text(NO_NET_ADMIN)
        monkeypatch.setattr(netns, "LAUNCHER", [sys.executable, str(tmp_path / "no_net_admin.py"), *netns.LAUNCHER])
    private = tmp_path / "var-tmp"
    private.mkdir()
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": private}, with_api=True)
    assert (outcome.exit_code, isolation.error) == (0, None), err
    assert seen["ns"]["user"] != HOST_NS["user"] and seen["ns"]["mnt"] != HOST_NS["mnt"]
    assert (private / name).exists() and not Path("/var/tmp", name).exists()
    assert seen["api_status"] == 200 and [e.pid for e in served[0].journal.exchanges()] == [outcome.pid]
    assert f"private /var/tmp: bound to {private}" in isolation.notes


@pytest.mark.parametrize("why", ["off", "unavailable"])
def test_without_namespaces_the_step_runs_and_the_notes_say_var_tmp_is_not_private(tmp_path, served, name,
                                                                                    monkeypatch, why):
    if why == "off":
        monkeypatch.setenv(netns.SWITCH, "off")
        expected = ("/var/tmp not private: network isolation off (HARNESS_NETNS=off); "
                    "the step shares the host's /var/tmp")
    else:
        monkeypatch.setattr(netns, "_probe_result", netns.Availability(False, reason="refused for this test"))
        expected = ("/var/tmp not private: namespaces unavailable here: refused for this test; "
                    "the step shares the host's /var/tmp")
    private = tmp_path / "var-tmp"
    private.mkdir()
    outcome, isolation, seen, err = step(tmp_path, served, name, {"/var/tmp": private})
    assert (outcome.exit_code, isolation.error) == (0, None), err
    assert expected in isolation.notes, isolation.notes
    assert Path("/var/tmp", name).exists() and not (private / name).exists()  # what the note warns of
    assert seen["ns"] == HOST_NS


def test_without_private_dirs_the_launcher_is_called_as_before(tmp_path, served, namespaces):
    api, server = served
    for private_dirs in (None, {}):
        with netns.isolated_step(["agent", "arg"], server, private_dirs) as isolation:
            channel = isolation.pass_fds[0]
            assert isolation.argv == [*netns.LAUNCHER, "--port", str(server.port), "--channel", str(channel),
                                      "--timeout", f"{netns.HANDSHAKE_TIMEOUT_S:g}", "--", "agent", "arg"]
