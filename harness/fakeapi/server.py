"""The fake model API on a real socket: HTTP/1.1 on 127.0.0.1, keep-alive, one thread per connection.

Only adapts bytes to FakeModelAPI.handle; streamed replies go out with chunked
transfer encoding so connections stay open between requests. Requests are
read by harness/fakeapi/http_framing.py, not http.server's reader: whatever a
local process sends, it gets an answer (a 4xx, journaled `malformed`, for what
cannot be read), and no server thread prints a traceback (a failure of the
server's own is one line in FakeModelAPI.internal_errors).
"""

from __future__ import annotations

import selectors
import socket
import struct
import sys
import threading
import time
from typing import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness.fakeapi import http_framing
from harness.fakeapi.core import FakeModelAPI, HTTPRequest, HTTPResponse
from harness.fakeapi.listeners import AdoptedListener, Wakeup
from harness.fakeapi.peer import NamespaceTables, pid_of_peer
from harness.fakeapi.refusal import failure_line
from harness.fakeapi.transport import HOST_LISTENER, STEP_LISTENER

LOOPBACK = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "harness-fakeapi/0.1"
    timeout = 600  # an idle keep-alive connection is dropped eventually, never held forever
    # A streamed reply is many small writes (the headers, then a chunk per event). With Nagle's algorithm each
    # write after the first waited for the client's delayed ACK: about 40 ms per reply on a kept-alive
    # connection (measured by `make bench`), where a real API's stream arrives at once.
    disable_nagle_algorithm = True
    # And a reply goes out in one write: the status line, the headers and every chunk are buffered, then flushed
    # once (as a real API's stream arrives at once; the bytes are the same). A write per chunk was nine
    # send() calls per streamed reply, each one waking the client and handing the interpreter lock to another
    # connection's thread: at 16 concurrent clients that cost more than the whole reply (`make bench`, issue 23).
    wbufsize = 1 << 16
    listener = HOST_LISTENER  # where this handler's connections arrive (harness/fakeapi/sender.py)
    server: "_Server"

    def setup(self) -> None:
        super().setup()
        self._peer_pid: int | None = None
        self._peer_looked_up = False
        self._step_membership: dict[int, bool | None] = {}  # this connection's sender, by step (sender.py)
        self.command, self.requestline, self.request_version = "", "", "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet by design
        pass

    _date: tuple[int, str] = (0, "")  # the Date header's value and the second it names, shared by all connections

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once a second rather than for every reply (a twentieth of a reply's time)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        second = int(time.time())
        cached = _Handler._date  # one read: another thread may replace it meanwhile, never half of it
        if cached[0] != second:
            cached = (second, super().date_time_string(second))
            _Handler._date = cached
        return cached[1]

    def handle_one_request(self) -> None:
        """One request, read strictly and within bounds, then answered; an unreadable one refused and journaled.

        In place of http.server's own, whose refusals (send_error) were HTML pages, never journaled.
        """
        self.close_connection = True
        try:
            head = http_framing.read_head(self.rfile)
            self.command, self.path, self.request_version = head.method, head.target, head.version_text
            self.requestline = f"{head.method} {head.target} {head.version_text}"
            body = http_framing.read_body(self.rfile, head, self._send_continue)
        except http_framing.Closed:
            return
        except http_framing.Malformed as bad:
            self._refuse_unreadable(bad)
            return
        # A tunnel request through the proxy variables is answered, journaled, never opened: then closed.
        self.close_connection = not head.keep_alive or head.method == "CONNECT"
        request = HTTPRequest(head.method, head.target, head.headers, body, self._peer(), listener=self.listener,
                              step_membership=self._step_membership)
        self._write_response(self._answer(lambda: self.server.api.handle(request)))

    def _answer(self, handle: Callable[[], HTTPResponse]) -> HTTPResponse:
        """The response made, its stream rendered whole, one connection at a time (the server's turnstile).

        The work between a request read and its reply written is the interpreter's alone: sixteen connection
        threads doing it at once only hand the interpreter lock to each other, each waking to find it taken,
        and 16 clients were served slower than one (`make bench`). Waiting for the turnstile waits without the
        interpreter lock; reading a request and writing a reply, which may block on a slow or hostile client,
        happen outside it, so one connection that stops reading never holds up the others.
        """
        with self.server.turnstile:
            response = handle()
            if response.chunks is not None and not isinstance(response.chunks, list):
                response.chunks = list(response.chunks)  # rendered here, not while writing to the socket
        return response

    def _refuse_unreadable(self, bad: http_framing.Malformed) -> None:
        """Journaled `malformed` (or `foreign`), answered in the provider's error shape, then the connection closed:
        after framing it cannot read, nobody can tell where a next request would start."""
        request = HTTPRequest(bad.method, bad.target, bad.headers, bad.body, self._peer(), listener=self.listener,
                              step_membership=self._step_membership)
        response = self._answer(lambda: self.server.api.refuse_malformed(request, bad.status, bad.reason))
        response.headers.append(("connection", "close"))
        self.command = bad.method  # a HEAD's refusal has no body
        self._write_response(response)
        self.close_connection = True

    def _send_continue(self) -> None:
        try:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the body read that follows finds the connection gone
            pass

    def _peer(self) -> int | None:
        """The sending pid, looked up once per connection (harness/fakeapi/peer.py)."""
        if not self._peer_looked_up:
            self._peer_looked_up = True
            api = self.server.api
            self._peer_pid = pid_of_peer(self.client_address[1], self.server.server_address[1], [api.step_pid or 0])
        return self._peer_pid

    def _write_response(self, response: HTTPResponse) -> None:
        """The response on the socket, with its scripted transport fault (harness/fakeapi/faults.py) if any."""
        wire = response.wire
        if wire is not None and wire.delay_s and not self._quiet_for(wire.delay_s):
            self.close_connection = True  # the client hung up during the silence: nobody to answer
            return
        if wire is not None and wire.reset:
            self._reset()
            return
        cut_chunks = wire.cut_after_chunks if wire is not None else None
        cut_bytes = wire.cut_after_bytes if wire is not None else None
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        try:
            if response.chunks is None:
                self.send_header("content-length", str(len(response.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(response.body if cut_bytes is None else response.body[:cut_bytes])
            else:
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for sent, chunk in enumerate(response.chunks):
                    if sent == cut_chunks:
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                if cut_chunks is None:
                    self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client hung up, reset, or stopped reading: nobody left to answer
            self.close_connection = True
        if cut_chunks is not None or cut_bytes is not None:
            self.close_connection = True  # closing with the body incomplete is the cut

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a TCP RST, not a FIN, and not one byte of a response."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        # Marked closed now; the descriptor really closes (RST) when finish() closes rfile and wfile,
        # before socketserver's shutdown(SHUT_WR) could send a FIN (it then fails quietly on the closed socket).
        self.connection.close()

    def _quiet_for(self, seconds: float) -> bool:
        """Send nothing for ``seconds``, in this handler thread only; False if the client hung up meanwhile."""
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self.connection, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    continue
                try:
                    pending = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    return False
                if not pending:
                    return False
                time.sleep(max(0.0, deadline - time.monotonic()))  # a pipelined request waits its turn
                break
        return True


class _StepHandler(_Handler):
    listener = STEP_LISTENER  # adopted from a step's network namespace: only the step's processes connect here


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: socketserver's default of 5 resets bursts of parallel connects

    def __init__(self, api: FakeModelAPI, port: int):
        self.api = api
        self.turnstile = threading.Lock()  # one request handled at a time, its socket I/O outside (_Handler._answer)
        self._wakeup = Wakeup()
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()  # as socketserver's: shutdown() waits for a loop to have run and ended
        try:
            super().__init__((LOOPBACK, port), _Handler)
        except BaseException:
            self._wakeup.close()
            raise

    def handle_error(self, request: object, client_address: object) -> None:
        """socketserver prints a handler's exception with its traceback on stderr; here it is one line on record."""
        exc = sys.exc_info()[1]
        if exc is not None:
            self.api.record_internal_error(failure_line(f"the fake API's connection from {client_address} failed", exc))

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """socketserver's loop, also woken by shutdown(): it returns at once instead of at the next poll."""
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wakeup.fd, selectors.EVENT_READ)
                while not self._stop_requested.is_set():
                    for key, _ in selector.select(poll_interval):
                        if key.fileobj is self:
                            self._handle_request_noblock()
                        else:
                            self._wakeup.drain()
                    self.service_actions()
        finally:
            self._stop_requested.clear()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serve_forever and wait until it has returned (called while it runs in another thread, as socketserver's)."""
        self._stop_requested.set()
        self._wakeup.wake()
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._wakeup.close()


class FakeAPIServer:
    """Start in a background thread; `with FakeAPIServer(api) as server: server.base_url`."""

    def __init__(self, api: FakeModelAPI, port: int = 0):
        self.api = api
        self._server = _Server(api, port)
        api.own_addresses.update({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> "FakeAPIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def adopt_listener(self, listener: "socket.socket", tables: NamespaceTables | None = None) -> AdoptedListener:
        """Also serve the connections accepted on `listener` (same handler, script and journal) until `.close()`.

        For a step in a network namespace of its own (harness/isolation/netns.py): the listener was created
        there, on 127.0.0.1 at this server's port, and handed over; `tables` are that namespace's
        TCP tables, where the sending pid of its connections is looked up (harness/fakeapi/peer.py).
        """
        return AdoptedListener(self._server, listener, tables, _StepHandler)

    def close(self) -> None:
        """Give up the port of a server that was never started."""
        self._server.server_close()

    def serve_forever(self) -> None:
        """Foreground serving for `harness serve`; returns on KeyboardInterrupt."""
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.server_close()

    def __enter__(self) -> "FakeAPIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
