"""`make bench`: its arithmetic, its table, its pieces on the reference agent, and the fixes it led to.

The pieces run with tiny budgets: they must produce sane figures, not fast
ones (the machine running the tests is busy). The regression tests at the end
hold the causes `make bench` found and the harness fixed, by what each fix
does (the socket option set, the wait woken by the exit, the tables not read),
never by a wall time: speed is the benchmark's to measure.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.bench import (
    command,
    explore_speed,
    fakeapi_latency,
    loopback_client,
    overhead,
    report,
)
from harness.bench.library_wall import _TOTALS
from harness.bench.stats import alternate, median, percentile, summary
from harness.isolation import process as process_module
from harness.fakeapi import peer
from harness.fakeapi import connection as connection_module
from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.isolation.process import wait_for_exit
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ arithmetic


def test_percentile_is_nearest_rank():
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile(list(range(1000, 0, -1)), 99) == 990  # order of the sample does not matter
    assert percentile([5.0], 99) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile([1, 2, 3, 4], 100) == 4
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 0)


def test_median_of_odd_and_even_samples():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        median([])
    assert summary([1, 2, 3, 4, 100]) == {"n": 5, "median": 3, "p99": 100, "min": 1, "max": 100}


def test_alternate_rotates_the_order_every_round():
    calls = []
    seen = []
    variants = {name: (lambda name=name: calls.append(name) or f"{name}{len(calls)}") for name in ("a", "b", "c")}
    results = alternate(variants, 4, lambda number, got: seen.append((number, sorted(got))))
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert results == {"a": ["a1", "a6", "a8", "a10"], "b": ["b2", "b4", "b9", "b11"], "c": ["c3", "c5", "c7", "c12"]}
    assert seen == [(n, ["a", "b", "c"]) for n in (1, 2, 3, 4)]


def test_library_totals_line_is_read():
    line = "260 runs: 258 as expected, 1 unexpected, 1 errors  (`!` marks a verdict ...)"
    assert _TOTALS.findall(line) == [("260", "258", "1", "1")]


# ------------------------------------------------------------------ the table, from a document

DOCUMENT = {
    "version": 1, "started": "2026-11-30T12:00:00+00:00", "duration_s": 412.3, "quick": False,
    "machine": {"cpu_model": "AMD EPYC", "cores": 2, "usable_cores": 2, "python": "3.11.7", "os": "Linux-6.1",
                "load_average_start": [0.5, 0.6, 0.7], "git": {"revision": "0123456789abcdef", "dirty": False}},
    "load_average_end": [1.0, 0.9, 0.8],
    "overhead": [
        {"target": "reference", "scenario": "retry-after-wrong-answer", "steps": 4, "rounds": 10, "ratio": 1.2,
         "ratio_no_netns": 1.02, "harness_s": {"median": 0.3}, "bare_s": {"median": 0.25}},
        {"target": "claude-code@2.1.332+append-every-launch", "scenario": "cc-wrong-answer-then-retry", "steps": 2,
         "rounds": 8, "ratio": 1.05, "ratio_no_netns": 1.0, "harness_s": {"median": 0.735}, "bare_s": {"median": 0.7}},
    ],
    "fakeapi": {
        "keep_alive": {"replies": 1000, "added_median_ms": 0.25, "added_p99_ms": 0.4,
                       "fake_ms": {"median": 0.27, "p99": 0.45}, "baseline_ms": {"median": 0.02, "p99": 0.05}},
        "new_connection": {"replies": 200, "added_median_ms": 0.4, "added_p99_ms": 0.6, "host_tcp_sockets": [50, 400]},
        "throughput": [{"clients": 1, "fake_replies_per_s": 2700.0, "baseline_replies_per_s": 9000.0,
                        "fake_vs_one_client": 1.0},
                       {"clients": 16, "fake_replies_per_s": 2600.0, "baseline_replies_per_s": 80000.0,
                        "fake_vs_one_client": 0.963}],
    },
    "explore": {"max_steps": 6, "in_process_steps_per_s": 299.9, "subprocess_steps_per_s": 11.5, "speedup": 26.1,
                "rounds": {"in_process": [{}, {}, {}], "subprocess": [{}, {}, {}]}},
    "library": {"library": "reference:* over scenarios", "speedup": 1.8,
                "serial": {"runs": 260, "wall_s": 120.0, "exit_code": 0},
                "two_workers": {"runs": 260, "wall_s": 66.7, "exit_code": 0}},
    "bisect": {"range": "claude-code@2.1.236..2.1.332+append-first-launch-only", "releases": 84, "installed": 10,
               "tested": 10, "skipped": 1, "log2_n": 7, "bound": 9, "first_changed": "2.1.268",
               "last_unchanged": "2.1.267", "wall_s": 95.0},
}


def test_targets_are_judged_at_their_limits():
    got = {v["target"]: (v["figure"], v["met"]) for v in report.verdicts(DOCUMENT)}
    assert got == {
        "overhead on reference": ("+20.0%", False),
        "overhead on claude-code@2.1.332+append-every-launch": ("+5.0%", True),  # at most 5%: 5.0 is met
        "fake API median added latency per streamed reply": ("0.250 ms", True),
        "fake API throughput, 16 concurrent clients against one": ("×0.96", False),  # slower than one: missed
        "in-process exploration on the reference agent": ("300 steps/s", False),  # 299.9 is not 300
        "releases installed per bisect": ("10 of 84", False),  # one more than the bound: missed
    }
    assert [v["met"] for v in report.verdicts({})] == [None, None, None, None]  # nothing measured: nothing met or missed


def test_markdown_table_from_a_document():
    text = report.render_markdown(DOCUMENT)
    assert "Machine: AMD EPYC, 2 of 2 cores, Python 3.11.7, Linux-6.1; revision 0123456789ab." in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == "| measurement | figure | target |"
    assert rows[1].startswith("| harness overhead, reference (retry-after-wrong-answer, 4 steps, median of 10")
    assert "×1.200 (+20.0%): harness 0.300 s against bare processes 0.250 s" in rows[1]
    assert rows[1].endswith("| <= +5%: **missed** |")
    assert rows[2].endswith("| <= +5%: met |")
    assert "median 0.250 ms, p99 0.400 ms" in rows[3] and rows[3].endswith("median < 1 ms: met |")
    assert "2700 replies/s (baseline server 9000) | - |" in rows[5]
    assert "2600 replies/s, ×0.96 of one client's (baseline server 80000)" in rows[6]
    assert rows[6].endswith("| >= one client's replies/s: **missed** |")
    assert "in-process 300 steps/s, fresh processes 11.5 steps/s (×26)" in rows[7]
    assert "serial 120.0 s, `-n 2` 66.7 s (×1.80)" in rows[8]
    assert "10 releases installed of 84 (⌈log2 n⌉ = 7; 1 skipped), first changed 2.1.268" in rows[9]
    assert rows[9].endswith("<= ⌈log2(n-1)⌉ + 2 (the two ends) = 9: **missed** |")
    assert len(rows) == 10


def test_markdown_says_what_was_not_measured():
    document = {**DOCUMENT, "overhead": [{"target": "claude-code@2.1.332+append-every-launch", "skipped": "not installed"}],
                "explore": {"error": "RuntimeError: boom"}, "bisect": {"error": "RuntimeError: exited 2"}}
    del document["fakeapi"], document["library"]
    rows = [line for line in report.render_markdown(document).splitlines() if line.startswith("| ")]
    assert rows[1:] == ["| overhead on claude-code@2.1.332+append-every-launch | not measured: not installed | - |",
                        "| exploration | not measured: RuntimeError: boom | - |",
                        "| `harness bisect` | not measured: RuntimeError: exited 2 | - |"]


# ------------------------------------------------------------------ the pieces, on the reference agent


def test_overhead_of_one_round_on_the_reference(tmp_path):
    scenario = load_scenario(ROOT / "scenarios" / "retry-after-wrong-answer.yaml")
    target, = resolve_target("reference")
    got = overhead.measure(scenario, target, 1, tmp_path)
    assert got["steps"] == 4 and got["rounds"] == 1
    assert len(got["bare_per_step_s"]) == 4 and all(0 < s < 10 for s in got["bare_per_step_s"])
    # The figures are the raw walls' ratios (no bound on them: one round on a shared machine says nothing about
    # speed, which make bench reports; a bound here failed a CI run whose other core was busy).
    raw = got["raw"]
    assert got["ratio"] > 0 and got["ratio"] == pytest.approx(raw["harness_s"][0] / raw["bare_s"][0], abs=1e-3)
    assert got["ratio_no_netns"] > 0
    assert got["ratio_no_netns"] == pytest.approx(raw["harness_no_netns_s"][0] / raw["bare_s"][0], abs=1e-3)
    assert got["ratio_per_step_netns"] == pytest.approx(raw["harness_per_step_netns_s"][0] / raw["bare_s"][0], abs=1e-3)
    assert not any(tmp_path.glob("snapshot-*")), "the recorded workspace's snapshot was left behind"


def test_bare_replay_runs_the_recorded_argv_with_the_bare_launch_session(tmp_path):
    scenario = load_scenario(ROOT / "scenarios" / "retry-after-wrong-answer.yaml")
    target, = resolve_target("reference")
    recording = overhead.record(scenario, target, tmp_path)
    try:
        resumed = recording.steps[1]
        assert "--resume" in resumed.argv and recording.steps[0].session_id in resumed.argv
        assert resumed.env["HOME"].startswith(str(recording.root)) and resumed.cwd.startswith(str(recording.root))
        walls = overhead.run_bare(recording)
        assert len(walls) == 4 and all(w > 0 for w in walls)
        logs = recording.root / "bench-logs"
        minted = json.loads((logs / "step-1.stdout").read_text())["session_id"]
        assert minted != recording.steps[0].session_id  # a fresh launch, a fresh session: swapped into the resumes
        assert json.loads((logs / "step-2.stdout").read_text())["session_id"] == minted
    finally:
        overhead.discard(recording)
    assert not recording.root.exists() and not recording.snapshot.exists()


def test_explore_speed_with_a_small_budget():
    got = explore_speed.measure(explore_speed.Budgets(in_process_examples=8, subprocess_examples=1, max_steps=3, rounds=1))
    assert got["in_process_steps_per_s"] > got["subprocess_steps_per_s"] > 0
    assert got["rounds"]["in_process"][0]["steps"] > 0 and got["rounds"]["subprocess"][0]["steps"] > 0
    assert got["rounds"]["in_process"][0]["seed"] == got["rounds"]["subprocess"][0]["seed"]


def test_quick_fakeapi_part_writes_json_and_table(tmp_path, capsys):
    code = command.main(["--quick", "--parts", "fakeapi", "--out", str(tmp_path)])
    assert code == 0
    document = json.loads((tmp_path / "bench.json").read_text())
    keep = document["fakeapi"]["keep_alive"]
    assert keep["replies"] == 200 and keep["fake_ms"]["median"] > keep["baseline_ms"]["median"] > 0
    assert keep["fake_ms"]["p99"] >= keep["fake_ms"]["median"]
    assert document["fakeapi"]["throughput"][0]["fake_replies_per_s"] > 0
    assert document["machine"]["cores"] >= 1 and document["machine"]["git"]["revision"]
    table = (tmp_path / "bench.md").read_text()
    assert "| fake API added latency per streamed reply (keep-alive, 200 replies" in table
    printed = capsys.readouterr().out
    assert "keep-alive: fake API median" in printed and table.rstrip("\n") in printed


def test_unknown_part_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as stop:
        command.main(["--parts", "overhead,speed", "--out", str(tmp_path)])
    assert stop.value.code == 2


# ------------------------------------------------------------------ what make bench found, kept fixed


@pytest.fixture
def served():
    api = FakeModelAPI(Journal())
    with FakeAPIServer(api) as server:
        yield api, server


def test_streamed_replies_go_out_with_nagle_off(served, monkeypatch):
    """Nagle's algorithm held each event of a stream until the client's delayed ACK: ~40 ms per reply."""
    _, server = served
    nodelay = []
    real = connection_module.Connection._answer_next

    def spy(connection):
        nodelay.append(connection.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        return real(connection)

    monkeypatch.setattr(connection_module.Connection, "_answer_next", spy)
    template = fakeapi_latency.request_template(json.dumps(
        {"model": "m", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode())
    with loopback_client.connect(server.port) as sock:
        loopback_client.exchange(sock, loopback_client.request_bytes(template, server.port))
    assert nodelay and all(nodelay), nodelay


def _in_thread(action, seconds: float) -> bool:
    """Whether `action` returned within `seconds` (a bound far from both the fixed and the broken behaviour)."""
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    worker.join(seconds)
    return not worker.is_alive()


def test_stopping_the_server_does_not_wait_out_its_poll():
    """Its loop polled, and stopping it waited for the next poll (50 ms in runs); here the poll is 60 s."""
    server = FakeAPIServer(FakeModelAPI(Journal()))
    server._thread._kwargs["poll_interval"] = 60.0
    server.start()
    assert _in_thread(server.stop, 10), "stopping the fake API waited for its loop's next poll"


def test_a_step_ends_when_its_process_does(monkeypatch):
    """Popen.wait(timeout) sleeps up to 50 ms between looks; the pidfd wakes the wait at the exit itself.

    With the periodic wake-up (for signal handlers) set to a minute, only the pidfd can end this wait in time.
    """
    monkeypatch.setattr(process_module, "_SIGNAL_CHECK_MS", 60_000)
    opened = []
    real_open = os.pidfd_open
    monkeypatch.setattr(os, "pidfd_open", lambda pid, *flags: opened.append(pid) or real_open(pid, *flags))
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.2); sys.exit(3)"])
    codes = []
    assert _in_thread(lambda: codes.append(wait_for_exit(proc, 120)), 30), "the wait was not woken by the exit"
    assert codes == [3] and opened == [proc.pid]
    monkeypatch.setattr(process_module, "_SIGNAL_CHECK_MS", 50)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_for_exit(proc, 0.1)
    finally:
        proc.kill()
        proc.wait()


def test_the_sending_process_is_found_without_reading_whole_tables(monkeypatch):
    """sock_diag looks up the one connection; /proc/net/tcp costs ~5 ms per read however empty it is."""
    def tables_read():
        raise AssertionError("the whole TCP tables were read")

    monkeypatch.setattr(peer, "_host_tables", tables_read)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            with accepted:
                client_port = client.getsockname()[1]
                assert peer._host_diag_inode(client_port, port) == str(os.fstat(client.fileno()).st_ino)
                assert peer.pid_of_peer(client_port, port, [os.getpid()]) == os.getpid()
    assert peer._host_diag_inode(client_port, port + 1) is None


def test_in_process_exploration_keeps_its_workspaces_in_memory(monkeypatch, tmp_path):
    """On disk, making and removing each sequence's workspace (and the agent's fsync) was a third of the search."""
    from harness.explore import machine
    from harness.explore.search import Budget, explore_target

    memory = tmp_path / "shm"  # stands in for /dev/shm, so that the test says the same on any machine
    memory.mkdir()
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(machine, "_RAM", memory)
    monkeypatch.setattr(machine, "_ram_checked", [])
    target, = resolve_target("reference+in-process")
    subprocess_target, = resolve_target("reference")
    assert machine.Exploration(target, 3).workspace_parent == memory
    assert machine.Exploration(subprocess_target, 3).workspace_parent is None  # processes: the usual folder
    made = []
    real_create = machine.LiveRun.__init__

    def spy(self, *args, **kwargs):
        real_create(self, *args, **kwargs)
        made.append(self.workspace.root)

    monkeypatch.setattr(machine.LiveRun, "__init__", spy)
    explore_target(target, Budget(profile="dev", examples=3, max_steps=3, seed=1))
    assert made and all(root.parent == memory for root in made)
    assert not any(root.exists() for root in made), "a sequence's workspace was left behind"
    monkeypatch.setenv("TMPDIR", "/tmp")
    assert machine.ram_folder() is None  # the user's choice wins
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(machine, "_RAM", tmp_path / "absent")
    monkeypatch.setattr(machine, "_ram_checked", [])
    assert machine.ram_folder() is None  # no such folder: the temporary folder
