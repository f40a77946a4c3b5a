"""One client connection of the fake API, driven by the server's event loop: bytes in, requests answered, bytes out.

The loop (harness/fakeapi/server.py) calls `readable`, `writable` and `tick`;
a connection never blocks. A request is parsed from what has arrived
(harness/fakeapi/received.py, with http_framing's strict reader), handed to
FakeModelAPI, and its response is rendered whole and queued; the next
request on the connection is read only after the last reply went out,
as HTTP/1.1 answers in order. A scripted transport fault
(harness/fakeapi/faults.py) is carried out here: a slow first byte is a
deadline the loop keeps (watching for the client to hang up meanwhile), a
reset closes with SO_LINGER 0, a cut sends part of the reply and closes.
"""

from __future__ import annotations

import email.utils
import selectors
import socket
import struct
import sys
import time
from http import HTTPStatus
from typing import Callable

from harness.fakeapi import http_framing
from harness.fakeapi.core import FakeModelAPI, HTTPRequest, HTTPResponse
from harness.fakeapi.peer import NamespaceTables, connections_from, pid_of_peer
from harness.fakeapi.received import NeedMore, Received
from harness.fakeapi.refusal import failure_line

IDLE_TIMEOUT_S = 600.0  # a connection silent this long (or not reading its reply) is dropped, never held forever
RECEIVE_BYTES = 1 << 18
SERVER_HEADER = f"harness-fakeapi/0.1 Python/{sys.version.split()[0]}"
_PHRASES = {status.value: status.phrase for status in HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

READING, WRITING, HOLDING, CLOSED = "reading", "writing", "holding", "closed"
Interest = Callable[["Connection", int], None]  # the loop's: watch this connection for these selector events


class _Date:
    """The Date header, formatted once a second rather than for every reply (a twentieth of a reply's time)."""

    second, text = 0, ""

    @classmethod
    def now(cls) -> str:
        second = int(time.time())
        if second != cls.second:
            cls.second, cls.text = second, email.utils.formatdate(second, usegmt=True)
        return cls.text


class Connection:
    def __init__(self, sock: socket.socket, address: tuple, api: FakeModelAPI, server_port: int, listener: str,
                 tables: NamespaceTables | None, interest: Interest):
        self.sock, self.address, self.api, self.listener = sock, address, api, listener
        self._server_port, self._tables, self._interest = server_port, tables, interest
        sock.setblocking(False)
        # A streamed reply went out as many small writes; with Nagle's algorithm each after the first waited for
        # the client's delayed ACK: about 40 ms per reply on a kept-alive connection (`make bench`).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.state = READING
        self._in = bytearray()
        self._need: NeedMore | None = None  # what must arrive before parsing is tried again
        self._ended, self._silent, self._failure = False, False, None
        self._continue_sent = False
        self._out = bytearray()
        self._close_after = False
        self._held: tuple[HTTPResponse, str, bool] | None = None
        self.deadline = time.monotonic() + IDLE_TIMEOUT_S  # the slow first byte's end, or when idleness drops it
        self._peer_pid: int | None = None
        self._peer_looked_up = False
        self._step_membership: dict[int, bool | None] = {}  # this connection's sender, by step (sender.py)

    @property
    def unsent(self) -> int:
        """Bytes of replies queued that the socket has not taken yet (a client that stops reading)."""
        return len(self._out)

    # ------------------------------------------------------------------ the loop's calls

    def readable(self) -> None:
        if self.state == HOLDING:
            self._watch_during_silence()
            return
        try:
            data = self.sock.recv(RECEIVE_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._failure = exc
        else:
            if data:
                self._in += data
                self.deadline = time.monotonic() + IDLE_TIMEOUT_S
            else:
                self._ended = True
        self._serve()

    def writable(self) -> None:
        self._flush()
        self._serve()  # a request pipelined behind the reply, or the client's close, is read now

    def tick(self, now: float) -> None:
        """The deadline passed: the silence before a held reply is over, or the connection was idle too long."""
        if now < self.deadline or self.state == CLOSED:
            return
        if self.state == HOLDING:
            response, method, close = self._held
            self._held = None
            self._emit(response, method, close)
        elif self.state == READING:
            self._silent = True
        else:
            self.close()  # the client stopped reading its reply
        self._serve()

    def close(self) -> None:
        if self.state == CLOSED:
            return
        self.state = CLOSED
        self._interest(self, 0)
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.sock.close()

    # ------------------------------------------------------------------ requests

    def _serve(self) -> None:
        """Answer every complete request that has arrived, one at a time, each once the last reply has gone out.

        Pipelined requests are answered in this loop, not by recursion: a client can pipeline thousands."""
        while self.state == READING:
            waiting = not (self._ended or self._silent or self._failure)  # more may come, and there is time for it
            if waiting and (not self._in or (self._need is not None and not self._need.ready(self._in))):
                break
            if not self._answer_next():
                break
        if self.state == READING:
            self._interest(self, selectors.EVENT_READ | (selectors.EVENT_WRITE if self._out else 0))

    def failed(self) -> None:
        """A bug past the core's own guard, raised from one of the loop's calls: one line on record, then closed."""
        self.api.record_internal_error(
            failure_line(f"the fake API's connection from {self.address} failed", sys.exc_info()[1]))
        self.close()

    def _answer_next(self) -> bool:
        """Parse and answer one request; False when it has not all arrived (or the connection is done)."""
        received = Received(self._in, ended=self._ended, silent=self._silent, failure=self._failure)
        try:
            head = http_framing.read_head(received)
            body = http_framing.read_body(received, head, self._send_continue)
        except NeedMore as need:
            self._need = need
            return False
        except http_framing.Closed:
            self.close()
            return False
        except http_framing.Malformed as bad:
            self._refuse_unreadable(bad)
            return False
        self._need, self._continue_sent = None, False
        del self._in[:received.pos]
        # A tunnel request through the proxy variables is answered, journaled, never opened: then closed.
        close = not head.keep_alive or head.method == "CONNECT"
        request = HTTPRequest(head.method, head.target, head.headers, body, self._peer(), listener=self.listener,
                              step_membership=self._step_membership)
        self._respond(self.api.handle(request), head.method, close)
        return True

    def _refuse_unreadable(self, bad: http_framing.Malformed) -> None:
        """Journaled `malformed` (or `foreign`), answered in the provider's error shape, then the connection closed:
        after framing it cannot read, nobody can tell where a next request would start."""
        request = HTTPRequest(bad.method, bad.target, bad.headers, bad.body, self._peer(), listener=self.listener,
                              step_membership=self._step_membership)
        response = self.api.refuse_malformed(request, bad.status, bad.reason)
        response.headers.append(("connection", "close"))
        self._in.clear()
        self._respond(response, bad.method, close=True)  # a HEAD's refusal has no body

    def _send_continue(self) -> None:
        if not self._continue_sent:
            self._continue_sent = True
            self._out += _CONTINUE
            self._flush_some()

    def _peer(self) -> int | None:
        """The sending pid, looked up once per connection (harness/fakeapi/peer.py), in its listener's namespace."""
        if not self._peer_looked_up:
            self._peer_looked_up = True
            with connections_from(self._tables):
                self._peer_pid = pid_of_peer(self.address[1], self._server_port, [self.api.step_pid or 0])
        return self._peer_pid

    # ------------------------------------------------------------------ replies

    def _respond(self, response: HTTPResponse, method: str, close: bool) -> None:
        if self.state == CLOSED:  # the client went while its request was read (a 100 Continue it never took)
            return
        if response.chunks is not None and not isinstance(response.chunks, list):
            response.chunks = list(response.chunks)  # rendered now, in the loop, as every reply is
        wire = response.wire
        if wire is not None and wire.delay_s:
            self.state, self._held = HOLDING, (response, method, close)
            self.deadline = time.monotonic() + wire.delay_s
            self._interest(self, selectors.EVENT_READ)  # only to see the client hang up meanwhile
            return
        self._emit(response, method, close)

    def _emit(self, response: HTTPResponse, method: str, close: bool) -> None:
        """The reply queued whole (status line, headers, every chunk: one write, as a real API's stream arrives),
        cut where its fault says; or, for a reset, not one byte."""
        wire = response.wire
        if wire is not None and wire.reset:
            self._reset()
            return
        cut_chunks = wire.cut_after_chunks if wire is not None else None
        cut_bytes = wire.cut_after_bytes if wire is not None else None
        lines = [f"HTTP/1.1 {response.status} {_PHRASES.get(response.status, '')}\r\n",
                 f"Server: {SERVER_HEADER}\r\n", f"Date: {_Date.now()}\r\n"]
        for name, value in response.headers:
            lines.append(f"{name}: {value}\r\n")
            if name.lower() == "connection":  # as http.server's send_header
                close = {"close": True, "keep-alive": False}.get(value.lower(), close)
        out = self._out
        if response.chunks is None:
            lines.append(f"content-length: {len(response.body)}\r\n\r\n")
            out += "".join(lines).encode("latin-1")
            if method != "HEAD":
                out += response.body if cut_bytes is None else response.body[:cut_bytes]
        else:
            lines.append("transfer-encoding: chunked\r\n\r\n")
            out += "".join(lines).encode("latin-1")
            for sent, chunk in enumerate(response.chunks):
                if sent == cut_chunks:
                    break
                out += b"%x\r\n%s\r\n" % (len(chunk), chunk)
            if cut_chunks is None:
                out += b"0\r\n\r\n"
        # Closing with the body incomplete is the cut.
        self._close_after = close or cut_chunks is not None or cut_bytes is not None
        self.state = WRITING
        self._flush()

    def _flush_some(self) -> bool:
        """Send what the socket takes now; False if the client is gone (the connection is then closed)."""
        while self._out:
            try:
                sent = self.sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:  # the client hung up, reset, or stopped reading: nobody left to answer
                self.close()
                return False
            del self._out[:sent]
            self.deadline = time.monotonic() + IDLE_TIMEOUT_S
        return True

    def _flush(self) -> None:
        if not self._flush_some():
            return
        if self._out:
            self._interest(self, selectors.EVENT_WRITE)
        elif self.state == WRITING:
            if self._close_after:
                self.close()
            else:
                self.state = READING  # the caller reads on (Connection._serve)

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a TCP RST, not a FIN, and not one byte of a response."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.state = CLOSED
        self._interest(self, 0)
        self.sock.close()

    def _watch_during_silence(self) -> None:
        """During a slow first byte: a client that hung up gets nothing; a request pipelined behind waits its turn."""
        try:
            pending = self.sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pending = b""
        if not pending:
            self.close()
        else:
            self._interest(self, 0)  # bytes waiting: the rest of the silence is kept without watching
