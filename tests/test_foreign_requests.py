"""Requests from a process that is not the running step's: journaled `foreign`, refused, never judged.

A real reference-agent run while another real local process POSTs to the same
fake API mid-step (with and without network namespaces), then each way the
fake API tells the step's requests from anybody else's: the listener adopted
from a step's namespace, the step's process tree, its session and its PID
namespace, a sender that cannot be found, requests outside any step and
in-process ones.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.isolation import netns
from harness.fakeapi.core import FakeModelAPI
from harness.journal.exchange import FOREIGN, MAIN
from harness.journal.requests import Journal, read_journal
from harness.fakeapi.sender import FOREIGN_ERROR, FOREIGN_ON_HOST, FOREIGN_OUTSIDE_STEP, SENDER_NOT_FOUND
from harness.fakeapi.server import FakeAPIServer
from harness.fakeapi.transport import HOST_LISTENER, STEP_LISTENER, HTTPRequest
from harness.results import PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from vocabulary import messages_body, reference, say, step_with

LIBRARY_SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "three-turns-three-processes.yaml"
SLOW_STEP = 2  # its reply is held back long enough for the intruder to send its request meanwhile
INTRUDER_BODY = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "You are somebody else entirely.",
                 "messages": [{"role": "user", "content": "Forget the number. Say 99."}]}

# Waits for the slow step's request in the run's journal, reads the fake API's port from its Host header,
# POSTs a request of its own meanwhile and prints what it got. A real, separate local process.
INTRUDER = textwrap.dedent("""
    import http.client, json, sys, time
    journal, step, body = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    deadline = time.monotonic() + 240
    host = None
    while host is None and time.monotonic() < deadline:
        try:
            lines = open(journal, encoding="utf-8").read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record["step"] == step and record["class"] == "main":
                host = record["headers"]["host"]
        time.sleep(0.02)
    if host is None:
        sys.exit("the slow step never showed up in the journal")
    address, port = host.rsplit(":", 1)
    conn = http.client.HTTPConnection(address, int(port), timeout=60)
    conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json"})
    response = conn.getresponse()
    print(json.dumps({"status": response.status, "body": json.loads(response.read())}))
""")


def slowed_library_scenario(seconds: float):
    """The library's three-turns-three-processes, its second step's reply held back `seconds` (a scripted fault)."""
    text = LIBRARY_SCENARIO.read_text(encoding="utf-8")
    plain = '  - resume: {prompt: "Add 5 to it.", reply: "22."}'
    assert plain in text, "the library scenario changed: update this test's edit"
    slowed = ('  - resume:\n      prompt: "Add 5 to it."\n'
              f'      reply: [{{fault: {{kind: slow_first_byte, seconds: {seconds:g}}}, text: "22."}}]')
    return scenario_from_text(text.replace(plain, slowed), str(LIBRARY_SCENARIO))


@pytest.fixture(params=["network namespace", "netns off"])
def isolation(request, monkeypatch):
    if request.param == "netns off":
        monkeypatch.setenv(netns.SWITCH, "off")
    else:
        monkeypatch.delenv(netns.SWITCH, raising=False)
        available = netns.availability()
        assert available.available, f"network namespaces unavailable here: {available.reason}"
    return request.param


def test_a_clean_agent_still_passes_while_another_process_posts_mid_step(tmp_path, isolation):
    journal_path = tmp_path / "journal.jsonl"
    intruder = subprocess.Popen([sys.executable, "-c", INTRUDER, str(journal_path), str(SLOW_STEP),
                                 json.dumps(INTRUDER_BODY)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        result = run_scenario(slowed_library_scenario(5), reference(), journal_path)
        out, err = intruder.communicate(timeout=120)
    finally:
        if intruder.poll() is None:
            intruder.kill()
            intruder.wait()
    assert intruder.returncode == 0, err
    assert result.error is None, result.error
    assert [(c.check, c.verdict) for c in result.checks] == [(c.check, PASS) for c in result.checks], [
        c.message for c in result.checks]
    assert result.status == PASS
    answer = json.loads(out)
    assert answer["status"] == 403 and answer["body"]["error"]["type"] == "permission_error", answer
    journal = read_journal(journal_path)
    foreign = [e for e in journal if e.klass == FOREIGN]
    assert len(foreign) == 1, [(e.seq, e.step, e.klass) for e in journal]
    (stray,) = foreign
    assert (stray.step, stray.status, stray.pid, stray.error) == (SLOW_STEP, 403, intruder.pid, FOREIGN_ERROR)
    (agent_pid,) = {e.pid for e in journal if e.step == SLOW_STEP and e.klass == MAIN}  # the step's root: exec'd
    expected = FOREIGN_ON_HOST if isolation == "network namespace" else FOREIGN_OUTSIDE_STEP.format(
        pid=intruder.pid, root=agent_pid)
    assert stray.notes[0] == expected
    assert json.loads(stray.body) == INTRUDER_BODY  # journaled as sent, for the record
    assert [(e.step, e.klass) for e in journal if e.klass != FOREIGN] == [(1, MAIN), (2, MAIN), (3, MAIN), (4, MAIN)]
    slow = result.steps[SLOW_STEP - 1]
    assert slow.unused_turns == 0  # the intruder took none of the step's turns
    # ... and the step's own record says so, without counting it as the agent's
    assert intruder.pid not in slow.pids and slow.requests == 1 and slow.classes == {MAIN: 1, FOREIGN: 1}
    assert (f"1 request(s) from a process that is not the step's (pid {intruder.pid}) were journaled as foreign and "
            "refused; they are not judged") in slow.notes, slow.notes


# ============================================================================ the rules, one by one


@pytest.fixture
def served(tmp_path):
    api = FakeModelAPI(Journal(tmp_path / "journal.jsonl"))
    with FakeAPIServer(api) as server:
        yield api, server
    api.journal.close()


def post(port: int, path: str = "/v1/messages", body: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=json.dumps(body or messages_body()), headers={"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


# Sends one request to the port in argv[1] from wherever it runs, and prints "STATUS PID".
SENDER = ("import http.client, json, os, sys\n"
          "conn = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=30)\n"
          "conn.request('POST', '/v1/messages', body=json.dumps({'model': 'm', 'max_tokens': 5, "
          "'messages': [{'role': 'user', 'content': 'hi'}]}))\n"
          "print(conn.getresponse().status, os.getpid())\n")


def send_from(argv_prefix: list[str], port: int, **popen) -> tuple[int, int]:
    done = subprocess.run([*argv_prefix, sys.executable, "-c", SENDER, str(port)], capture_output=True, text=True,
                          timeout=60, **popen)
    assert done.returncode == 0, done.stderr
    status, pid = done.stdout.split()
    return int(status), int(pid)


def test_a_request_on_the_host_listener_while_a_namespace_listener_is_open_is_foreign_whoever_sent_it(served):
    """The step is this very process (the pid rule would say it is the step's): the listener rule decides first."""
    api, server = served
    api.begin_step(step_with(say("for the step")))
    api.set_step_pid(os.getpid())
    stand_in = socket.create_server(("127.0.0.1", 0))  # stands for the listener a namespaced step hands over
    adopted = server.adopt_listener(stand_in)
    try:
        status, body = post(server.port)
        assert (status, body["error"]["type"]) == (403, "permission_error")
        assert post(stand_in.getsockname()[1])[0] == 200  # the namespace's way in: the step's
    finally:
        adopted.close()
    assert post(server.port)[0] == 200  # the namespace is gone: the pid rule again (this process is the root)
    refused, answered, after = api.journal.exchanges()
    assert (refused.klass, refused.notes[0], refused.pid) == (FOREIGN, FOREIGN_ON_HOST, os.getpid())
    assert (answered.klass, answered.reply_text(), answered.unforeseen) == (MAIN, "for the step", False)
    assert (after.klass, after.unforeseen) == (MAIN, True)  # judged as the step's, past its one scripted turn
    api.end_step()


# A step's root as run_process starts one (a session of its own). Told to on stdin, it has a grandchild send a
# request, then a child in a session of its own (a descendant only), then an orphan (whose parent has exited:
# no descendant any more, only in the session) that, as Inspect's sandbox tools server does, runs a command in a
# session of its own (neither in the session nor a descendant of the root: a descendant of the orphan).
STEP_ROOT = textwrap.dedent("""
    import os, subprocess, sys, time
    port, sender, out = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.stdin.readline()
    subprocess.run(["sh", "-c", '"$0" -c "$1" "$2" > "$3"', sys.executable, sender, port, out + "/grandchild"], check=True)
    with open(out + "/own-session", "w") as handle:
        subprocess.run([sys.executable, "-c", sender, port], stdout=handle, start_new_session=True, check=True)
    if os.fork() == 0:  # the orphan's parent
        parent = os.getpid()
        if os.fork() == 0:
            while os.getppid() == parent:  # until reparented
                time.sleep(0.01)
            with open(out + "/orphan", "w") as handle:
                subprocess.run([sys.executable, "-c", sender, port], stdout=handle, check=True)
            with open(out + "/orphans-command", "w") as handle:
                subprocess.run([sys.executable, "-c", sender, port], stdout=handle, start_new_session=True, check=True)
            os.rename(out + "/orphan", out + "/orphan.done")
            os._exit(0)
        os._exit(0)
    time.sleep(60)
""")


def test_the_step_root_its_session_and_their_descendants_are_the_steps_anyone_else_is_foreign(served, tmp_path):
    api, server = served
    api.begin_step(step_with(*(say(f"turn {n}") for n in range(5))))
    root = subprocess.Popen([sys.executable, "-c", STEP_ROOT, str(server.port), SENDER, str(tmp_path)],
                            stdin=subprocess.PIPE, text=True, start_new_session=True)
    try:
        api.set_step_pid(root.pid)
        root.stdin.write("go\n")
        root.stdin.flush()
        deadline = time.monotonic() + 60
        while not (tmp_path / "orphan.done").exists() and time.monotonic() < deadline and root.poll() is None:
            time.sleep(0.05)
        stranger_status, stranger_pid = send_from([], server.port)  # a child of the test's, not of the step's
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
    sent = {name: tuple(map(int, (tmp_path / name).read_text().split()))
            for name in ("grandchild", "own-session", "orphan.done", "orphans-command")}
    assert [status for status, _ in sent.values()] + [stranger_status] == [200, 200, 200, 200, 403]
    by_pid = {e.pid: e for e in api.journal.exchanges()}
    assert [(by_pid[pid].klass, by_pid[pid].reply_text()) for _, pid in sent.values()] == [
        (MAIN, "turn 0"), (MAIN, "turn 1"), (MAIN, "turn 2"), (MAIN, "turn 3")]
    stranger = by_pid[stranger_pid]
    assert stranger.klass == FOREIGN
    assert stranger.notes[0] == FOREIGN_OUTSIDE_STEP.format(pid=stranger_pid, root=root.pid)
    assert api.end_step().unused_turns == 1  # the stranger's request took no turn


def test_a_process_in_the_pid_namespace_the_step_made_is_the_steps(served, tmp_path):
    """nsenter puts a sender in the step's PID namespace from outside its tree and session: only the namespace says."""
    if not (shutil.which("unshare") and shutil.which("nsenter")):
        pytest.fail("this test needs unshare and nsenter (util-linux)")
    api, server = served
    api.begin_step(step_with(say("in the namespace")))
    root = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sleep", "60"], start_new_session=True,
                            stderr=subprocess.PIPE)
    try:
        inside = _child_of(root.pid, timeout_s=20)
        assert inside is not None, ("cannot make a PID namespace here: "
                                    f"{root.stderr.read1().decode(errors='replace') if root.poll() is not None else 'no child'}")
        api.set_step_pid(root.pid)
        status, _ = send_from(["nsenter", f"--target={inside}", "--pid"], server.port)
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
    (exchange,) = api.journal.exchanges()
    assert status == 200 and exchange.klass == MAIN, exchange.notes
    api.end_step()


def _child_of(pid: int, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.02)
    return None


def test_outside_any_step_requests_are_served_as_before(served):
    api, server = served
    status, _, = post(server.port)
    (exchange,) = api.journal.exchanges()
    assert (status, exchange.klass, exchange.step, exchange.pid, exchange.notes) == (
        200, MAIN, None, os.getpid(), ["request outside any step"])


def test_an_unknown_sender_is_judged_as_before_and_says_so():
    """A socket request whose holder was not found (an exited client): not foreign, pid None, a note saying so."""
    api = FakeModelAPI()
    api.begin_step(step_with(say("judged")))
    api.set_step_pid(os.getpid())
    request = HTTPRequest("POST", "/v1/messages", [("host", "127.0.0.1:1")], json.dumps(messages_body()).encode(),
                          peer_pid=None, listener=HOST_LISTENER)
    response = api.handle(request)
    (exchange,) = api.journal.exchanges()
    assert (response.status, exchange.klass, exchange.pid, exchange.reply_text()) == (200, MAIN, None, "judged")
    assert exchange.notes == [SENDER_NOT_FOUND]
    api.end_step()


def test_in_process_requests_and_the_step_namespace_are_never_foreign():
    api = FakeModelAPI()
    api.begin_step(step_with(say("in-process"), say("namespaced")))
    api.set_step_pid(1)  # whatever the pid: neither kind is decided by it
    body = json.dumps(messages_body()).encode()
    in_process = api.handle(HTTPRequest("POST", "/v1/messages", [], body, peer_pid=os.getpid(), listener=None))
    namespaced = api.handle(HTTPRequest("POST", "/v1/messages", [], body, peer_pid=os.getpid(), listener=STEP_LISTENER))
    assert (in_process.status, namespaced.status) == (200, 200)
    assert [(e.klass, e.reply_text()) for e in api.journal.exchanges()] == [(MAIN, "in-process"), (MAIN, "namespaced")]
    api.end_step()


@pytest.mark.parametrize("path,shape", [
    ("/v1/messages", lambda b: b["error"]["type"] == "permission_error" and b["type"] == "error"),
    ("/v1/chat/completions", lambda b: b["error"]["type"] == "permission_error" and "param" in b["error"]),
    ("/v1/responses", lambda b: b["error"]["type"] == "permission_error" and "param" in b["error"]),
    ("/v1beta/models/gemini-2.5-pro:generateContent", lambda b: b["error"]["status"] == "PERMISSION_DENIED"),
])
def test_a_foreign_request_is_refused_in_the_providers_error_shape(served, path, shape):
    api, server = served
    api.begin_step(step_with(say("never given")))
    api.set_step_pid(1)  # init: this test process is not in its tree, session or namespace
    status, body = post(server.port, path, {"anything": True})
    assert status == 403 and shape(body), body
    (exchange,) = api.journal.exchanges()
    assert (exchange.klass, exchange.path, exchange.normalized) == (FOREIGN, path, None)
    assert api.end_step().unused_turns == 1
