"""The fake API's event loop (harness/fakeapi/server.py, connection.py): what serving every connection from one
thread that never waits on a socket must still guarantee.

Raw bytes over real sockets to a real FakeAPIServer: a client that waits for
100 Continue before its body gets it; thousands of pipelined requests are
answered in order; a client that stops reading a large reply holds up nobody,
and still gets every byte when it reads again; a request cut off halfway is
answered 408 (and journaled) once the connection's timeout passes, an idle
connection is closed; stopping the server closes its connections and leaves
no thread behind.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

from harness.fakeapi import connection as connection_module
from harness.fakeapi import server as server_module
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.server import FakeAPIServer
from harness.journal.requests import Journal
from vocabulary import messages_body, say, step_with


def _head(body: bytes, *extra: str) -> bytes:
    lines = ["POST /v1/messages HTTP/1.1", "host: 127.0.0.1", "content-type: application/json",
             f"content-length: {len(body)}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_until(sock: socket.socket, done, limit_s: float = 10.0) -> bytes:
    """Read until `done(received)` or the server closes; fails the test after `limit_s`."""
    sock.settimeout(limit_s)
    received = bytearray()
    while not done(received):
        piece = sock.recv(1 << 16)
        if not piece:
            break
        received += piece
    return bytes(received)


def test_a_client_that_waits_for_100_continue_gets_it_before_it_sends_the_body(served):
    api, server, _ = served
    api.begin_step(step_with(say("continued")))
    body = json.dumps(messages_body()).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(_head(body, "expect: 100-continue"))
        interim = _read_until(sock, lambda got: b"\r\n\r\n" in got)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        final = _read_until(sock, lambda got: b"continued" in got)
    assert final.startswith(b"HTTP/1.1 200 OK\r\n")
    assert [e.status for e in api.journal.exchanges()] == [200]


def test_thousands_of_pipelined_requests_are_answered_each_in_order(served):
    """Answered in a loop, never one call deeper per request: 3000 of them sent at once."""
    api, server, _ = served
    count = 3000
    request = b"GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sender = threading.Thread(target=lambda: (sock.sendall(request * count), sock.shutdown(socket.SHUT_WR)))
        sender.start()
        received = _read_until(sock, lambda got: False, limit_s=60)
        sender.join()
    assert received.count(b"HTTP/1.1 200 OK\r\n") == count
    assert [e.seq for e in api.journal.exchanges()] == list(range(1, count + 1))
    assert api.internal_errors == []


def test_a_client_that_stops_reading_a_large_reply_holds_up_nobody_and_gets_every_byte_later(served):
    api, server, _ = served
    text = "x" * (8 << 20)  # far more than the loopback socket buffers hold
    api.begin_step(step_with(say(text)))
    body = json.dumps(messages_body()).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as stalled:
        stalled.sendall(_head(body) + body)
        deadline = time.monotonic() + 10
        while not api.journal.exchanges() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        unsent = [c.unsent for c in list(server._server._connections)]
        assert unsent and unsent[0] > 0, "the reply fit the socket buffers: nothing here stalls the server"
        started = time.monotonic()
        other = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        other.request("GET", "/v1/models")
        assert other.getresponse().status == 200
        other.close()
        served_other_s = time.monotonic() - started
        reply = _read_until(stalled, lambda got: len(got) > len(text) and got.endswith(b"}"), limit_s=30)
    head, _, payload = reply.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    assert len(payload) == length and json.loads(payload)["content"][0]["text"] == text
    assert served_other_s < 5.0, served_other_s


def test_a_request_cut_off_halfway_is_answered_408_once_the_timeout_passes_and_an_idle_connection_closed(
        served, monkeypatch):
    api, server, _ = served
    monkeypatch.setattr(connection_module, "IDLE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(server_module, "SWEEP_S", 0.1)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as idle, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as halfway:
        halfway.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        answered = _read_until(halfway, lambda got: False)  # until the server closes
        assert _read_until(idle, lambda got: False) == b""  # closed without a word
    assert answered.startswith(b"HTTP/1.1 408 ")
    (exchange,) = api.journal.exchanges()
    assert exchange.klass == "malformed" and exchange.status == 408
    assert exchange.error == "the client fell silent inside the headers"


def test_stopping_the_server_closes_its_connections_and_leaves_no_thread(tmp_path):
    api = FakeModelAPI(Journal(tmp_path / "journal.jsonl"))
    server = FakeAPIServer(api).start()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        assert _read_until(sock, lambda got: got.endswith(b"}")).startswith(b"HTTP/1.1 200 OK")
        assert server._server.open_connections == 1
        server.stop()
        assert _read_until(sock, lambda got: False, limit_s=5) == b""
    finally:
        sock.close()
        api.journal.close()
    assert server._server.open_connections == 0
    assert not [t for t in threading.enumerate() if t.name == "fakeapi-loop"]


def test_a_failure_in_the_loop_itself_is_one_recorded_line_and_serving_goes_on(served, monkeypatch, capfd):
    api, server, _ = served
    real = connection_module.Connection.__init__
    failures = ["once"]

    def failing_once(self, *args, **kwargs):
        if failures:
            failures.pop()
            raise RuntimeError("a bug while accepting")
        real(self, *args, **kwargs)

    monkeypatch.setattr(connection_module.Connection, "__init__", failing_once)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as first:
        assert _read_until(first, lambda got: False) == b""  # closed: nothing could be made of it
    second = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    second.request("GET", "/v1/models")
    assert second.getresponse().status == 200
    second.close()
    (line,) = api.internal_errors
    assert line.startswith("the fake API's event loop failed: RuntimeError: a bug while accepting")
    assert "\n" not in line and "Traceback" not in capfd.readouterr().err
