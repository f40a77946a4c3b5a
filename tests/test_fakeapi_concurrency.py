"""The fake API under concurrency (issue 23): what it keeps when many connections send at once.

Made faster by taking the journal's disk write out of the lock that hands out
seq (group commit, harness/journal/requests.py), by checking a connection's
sender once per step instead of once per request (harness/fakeapi/sender.py),
by redacting each distinct header line once (harness/redaction: redact_headers)
and by sending a reply in one write. These hold it to what it promised before:
every request journaled byte-exact, in seq order, on disk before its reply
leaves; a sender judged for the step that runs now; the journal's headers as
the one redactor makes them. Real server on 127.0.0.1, real sockets.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading

import pytest

from harness import redaction
from harness.bench import fakeapi_latency, loopback_client
from harness.fakeapi import peer
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.script import MAX_REQUESTS_PER_STEP
from harness.fakeapi.server import FakeAPIServer
from harness.journal.exchange import FOREIGN, MAIN, Exchange
from harness.journal.requests import Journal, read_journal
from vocabulary import messages_body, say, step_with

CLIENTS = 16
REQUESTS_EACH = 12


def _seq_of(response: http.client.HTTPResponse) -> int:
    return int(response.getheader("request-id").removeprefix("req_harness"))


def test_concurrent_connections_are_journaled_byte_exact_in_seq_order_each_on_disk_before_its_reply(served):
    api, server, path = served
    total = CLIENTS * REQUESTS_EACH
    api.begin_step(step_with(*(say(f"turn {n}") for n in range(total))), max_requests=total)
    api.set_step_pid(os.getpid())
    sent: dict[bytes, tuple[int, str]] = {}  # body -> (seq, the reply text the client read)
    problems: list[str] = []
    start = threading.Barrier(CLIENTS)

    def client(number: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            start.wait()
            for index in range(REQUESTS_EACH):
                body = json.dumps(messages_body(f"client {number} request {index} \u00e9\u2028",
                                                stream=index % 2 == 0)).encode()
                conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json"})
                response = conn.getresponse()
                data = response.read()
                seq = _seq_of(response)
                on_disk = {e.seq for e in read_journal(path)}  # read before the next request: the reply is in hand
                if response.status != 200 or seq not in on_disk:
                    problems.append(f"seq {seq}: status {response.status}, on disk before its reply: {seq in on_disk}")
                text = "".join(json.loads(line[6:])["delta"].get("text", "") for line in data.decode().splitlines()
                               if line.startswith("data: ") and '"content_block_delta"' in line) if index % 2 == 0 \
                    else json.loads(data)["content"][0]["text"]
                sent[body] = (seq, text)
        except Exception as exc:  # noqa: BLE001 - reported below, never a silent thread death
            problems.append(f"client {number}: {exc!r}")
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    api.end_step()
    assert not problems, problems[:5]
    on_disk = read_journal(path)
    assert [e.seq for e in on_disk] == list(range(1, total + 1))  # every request, one line each, in seq order
    assert [e.seq for e in api.journal.exchanges()] == list(range(1, total + 1))
    by_body = {e.body: e for e in on_disk}
    assert set(by_body) == set(sent)  # byte-exact: non-ASCII and U+2028 included
    for body, (seq, text) in sent.items():
        exchange = by_body[body]
        assert (exchange.seq, exchange.klass) == (seq, MAIN)
        # turns are taken in seq order, and the journal's reply is the one that client read
        assert exchange.reply_text() == text == f"turn {seq - 1}"


def test_a_connection_s_sender_is_checked_once_per_step_and_afresh_for_the_next(served, monkeypatch):
    """Read from /proc for every request before (a dozen system calls a reply); a cache that forgot which step
    it answered for would serve a later step's stranger."""
    api, server, _ = served
    asked: list[tuple[int, int]] = []
    real = peer.belongs_to_step

    def counting(pid: int, root: int):
        asked.append((pid, root))
        return real(pid, root)

    monkeypatch.setattr(peer, "belongs_to_step", counting)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)  # one keep-alive connection throughout
    try:
        api.begin_step(step_with(*(say(f"turn {n}") for n in range(3))))
        api.set_step_pid(os.getpid())  # this process is the step's root: its connection is the step's
        statuses = []
        for _ in range(3):
            conn.request("POST", "/v1/messages", body=json.dumps(messages_body()))
            response = conn.getresponse()
            response.read()
            statuses.append(response.status)
        api.end_step()
        assert statuses == [200, 200, 200] and asked == [(os.getpid(), os.getpid())]
        api.begin_step(step_with(say("for the stranger's step"), index=2))
        api.set_step_pid(stranger.pid)  # a step whose root is another process: this connection is not its
        conn.request("POST", "/v1/messages", body=json.dumps(messages_body()))
        response = conn.getresponse()
        response.read()
        api.end_step()
    finally:
        conn.close()
        stranger.kill()
        stranger.wait()
    assert response.status == 403 and asked[1:] == [(os.getpid(), stranger.pid)]
    assert [e.klass for e in api.journal.exchanges()] == [MAIN, MAIN, MAIN, FOREIGN]


@pytest.mark.parametrize("headers", [
    [("Host", "127.0.0.1:1"), ("x-api-key", "sk-ant-api03-" + "a" * 90), ("User-Agent", "agent/1.0")],
    [("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz0123456789"), ("X-Extra", "a"), ("x-extra", "b")],
    [("X-Note", "token=ghp_" + "B" * 36 + " and more"), ("Content-Length", "12")],
    [("X-Long", "x" * redaction.LONGEST_REMEMBERED + " AKIAABCDEFGHIJKLMNOP"), ("X-Long", "plain")],
])
def test_journaled_headers_are_exactly_what_the_one_redactor_makes_of_them(headers):
    fresh: dict[str, str] = {}
    for name, value in headers:  # redact_value line by line, nothing remembered
        shown = redaction.redact_value(name.lower(), value)
        fresh[name.lower()] = f"{fresh[name.lower()]}, {shown}" if name.lower() in fresh else shown
    for _ in range(2):  # the second time from memory
        assert redaction.redact_headers(headers) == fresh


def test_the_bench_s_fake_api_streams_every_reply_past_a_run_s_request_cap(tmp_path):
    """Past the cap (100 a step) every reply was a short 400: the bench measured refusals, not streams."""
    api, server = fakeapi_latency._fake_api(tmp_path / "journal.jsonl")
    try:
        template = fakeapi_latency.request_template(json.dumps(messages_body(stream=True)).encode())
        request = loopback_client.request_bytes(template, server.port)
        with loopback_client.connect(server.port) as sock:
            for _ in range(MAX_REQUESTS_PER_STEP + 20):
                loopback_client.exchange(sock, request)  # raises on anything but a 200
    finally:
        fakeapi_latency._close(api, server)
    statuses = {e.status for e in read_journal(tmp_path / "journal.jsonl")}
    assert statuses == {200}


def test_the_loopback_client_refuses_a_reply_that_is_not_a_200():
    with FakeAPIServer(FakeModelAPI(Journal())) as server, loopback_client.connect(server.port) as sock:
        wrong = f"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
        with pytest.raises(ValueError, match="not a 200 reply"):
            loopback_client.exchange(sock, wrong)


def _exchange(seq: int) -> Exchange:
    return Exchange(seq=seq, method="POST", path="/v1/messages", query="", headers={}, body=b"{}", klass=MAIN, status=200)


def test_journal_lines_are_written_in_the_order_recorded_each_before_its_writer_returns(tmp_path):
    """Recording in order (as the fake API does, under its lock) and writing from many threads at once."""
    path = tmp_path / "journal.jsonl"
    seen: list[int] = []
    journal = Journal(path, on_append=lambda exchange: seen.append(exchange.seq))
    order = threading.Lock()
    counter = iter(range(1, 10_000))
    late: list[int] = []

    def appender() -> None:
        for _ in range(50):
            with order:
                seq = next(counter)
                journal.record(_exchange(seq))
            journal.write_recorded()
            if seq not in {e.seq for e in read_journal(path)}:
                late.append(seq)

    threads = [threading.Thread(target=appender) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    journal.close()
    assert not late
    assert [e.seq for e in read_journal(path)] == list(range(1, 401)) == seen


def test_closing_the_journal_writes_what_was_recorded_and_not_yet_written(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    journal.record(_exchange(1))
    journal.close()
    assert [e.seq for e in read_journal(tmp_path / "journal.jsonl")] == [1]
