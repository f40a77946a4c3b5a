"""The fake model API on a real socket: HTTP/1.1 on 127.0.0.1, keep-alive, every connection served by one thread.

Only adapts bytes to FakeModelAPI.handle (harness/fakeapi/connection.py);
streamed replies go out with chunked transfer encoding so connections stay
open between requests. Requests are read by harness/fakeapi/http_framing.py:
whatever a local process sends, it gets an answer (a 4xx, journaled
`malformed`, for what cannot be read), and no failure prints a traceback (a
failure of the server's own is one line in FakeModelAPI.internal_errors).

One event loop, not a thread per connection: the work between a request read
and its reply written is the interpreter's alone, and sixteen connection
threads doing it only handed the interpreter lock to each other, each waking
to find it taken: 16 concurrent clients were served slower than one
(`make bench`, issue 23). Here no socket is ever waited on, so a client that
stops reading, or a reply held back by a scripted slow first byte, holds up
nobody else.
"""

from __future__ import annotations

import collections
import selectors
import socket
import threading
import time
from typing import Callable

from harness.fakeapi.connection import CLOSED, HOLDING, Connection
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.listeners import AdoptedListener, Wakeup
from harness.fakeapi.peer import NamespaceTables
from harness.fakeapi.refusal import failure_line
from harness.fakeapi.transport import HOST_LISTENER, STEP_LISTENER

LOOPBACK = "127.0.0.1"
BACKLOG = 128  # socketserver's default of 5 reset bursts of parallel connects
SWEEP_S = 1.0  # how often idle connections are looked at (their timeout is minutes)


class _Listening:
    """A listening socket in the loop: where its connections come from, and where their senders are looked up."""

    def __init__(self, sock: socket.socket, listener: str, tables: NamespaceTables | None):
        self.sock, self.listener, self.tables = sock, listener, tables


class EventLoop:
    """Accepts on the server's listener (and on listeners adopted from steps' namespaces) and serves every
    connection, in the one thread that runs serve_forever; other threads act on it through `call`."""

    def __init__(self, api: FakeModelAPI, port: int):
        self.api = api
        self._listening = _Listening(socket.create_server((LOOPBACK, port), backlog=BACKLOG), HOST_LISTENER, None)
        self._listening.sock.setblocking(False)
        self.port = self._listening.sock.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._wakeup = Wakeup()
        self._selector.register(self._listening.sock, selectors.EVENT_READ, self._listening)
        self._selector.register(self._wakeup.fd, selectors.EVENT_READ, self._wakeup)
        self._connections: dict[Connection, int] = {}  # each open connection, with the events it is watched for
        self._commands: collections.deque[tuple[Callable[[], None], threading.Event]] = collections.deque()
        self._lock = threading.Lock()
        self._running_in: int | None = None  # the thread serving, while one is
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._closed = False
        self.accepted = 0  # connections accepted so far, on every listener

    # ------------------------------------------------------------------ from other threads

    def call(self, action: Callable[[], None]) -> None:
        """Run `action` in the loop (between events) and wait for it; at once when no loop runs, or from its thread."""
        with self._lock:
            if self._running_in is None or self._running_in == threading.get_ident():
                action()
                return
            done = threading.Event()
            self._commands.append((action, done))
        self._wakeup.wake()
        done.wait()

    def stop(self) -> None:
        """Make serve_forever return, and wait until it has (called while it runs in another thread)."""
        self._stop_requested.set()
        self._wakeup.wake()
        self._stopped.wait()

    def close(self) -> None:
        """Close every connection and listener (the loop has stopped, or never ran)."""
        if self._closed:
            return
        self._closed = True
        for connection in list(self._connections):
            connection.close()
        for key in list(self._selector.get_map().values()):
            if isinstance(key.data, _Listening):
                key.data.sock.close()
        self._listening.sock.close()
        self._selector.close()
        self._wakeup.close()

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    # ------------------------------------------------------------------ the loop

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        with self._lock:
            self._running_in = threading.get_ident()
            self._stopped.clear()
        try:
            next_sweep = time.monotonic() + SWEEP_S
            while not self._stop_requested.is_set():
                now = time.monotonic()
                soonest = min([next_sweep, *(c.deadline for c in self._connections if c.state == HOLDING)])
                for key, events in self._selector.select(max(0.0, min(poll_interval, soonest - now))):
                    try:
                        self._dispatch(key.data, events)
                    except Exception as exc:  # noqa: BLE001 - the loop serves on; one line on record, no traceback
                        self.api.record_internal_error(failure_line("the fake API's event loop failed", exc))
                now = time.monotonic()
                if now >= soonest:
                    for connection in list(self._connections):
                        if now >= connection.deadline:
                            self._guarded(connection, connection.tick, now)
                    next_sweep = now + SWEEP_S if now >= next_sweep else next_sweep
        finally:
            with self._lock:
                self._running_in = None
                commands, self._commands = list(self._commands), collections.deque()
            for action, done in commands:  # asked for as the loop ended: done now, by the caller's rules
                try:
                    action()
                finally:
                    done.set()
            self._stop_requested.clear()
            self._stopped.set()

    def _dispatch(self, target: object, events: int) -> None:
        if isinstance(target, Connection):
            if events & selectors.EVENT_WRITE and target.state != CLOSED:
                self._guarded(target, target.writable)
            if events & selectors.EVENT_READ and target.state != CLOSED:
                self._guarded(target, target.readable)
        elif isinstance(target, _Listening):
            self._accept(target)
        else:
            self._wakeup.drain()
            while self._commands:
                with self._lock:
                    action, done = self._commands.popleft()
                try:
                    action()
                finally:
                    done.set()

    @staticmethod
    def _guarded(connection: Connection, call: Callable, *args: object) -> None:
        try:
            call(*args)
        except Exception:  # noqa: BLE001 - recorded as one line (Connection.failed), never a traceback
            connection.failed()

    def _accept(self, listening: _Listening) -> None:
        while True:
            try:
                sock, address = listening.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError:  # the listener was closed under us (an adopted one, given back)
                return
            try:
                connection = Connection(sock, address, self.api, self.port, listening.listener, listening.tables,
                                        self._watch)
            except OSError:  # gone before its options could be set: nobody to answer
                sock.close()
                continue
            except BaseException:
                sock.close()
                raise
            self._connections[connection] = 0
            self.accepted += 1
            self._watch(connection, selectors.EVENT_READ)

    def _watch(self, connection: Connection, events: int) -> None:
        """What `connection` is watched for: changed only when it changes (each change is a system call).
        A closed connection is forgotten, and unregistered before its socket closes."""
        was = self._connections.get(connection)
        if was is None:
            return
        if connection.state == CLOSED:
            del self._connections[connection]
            if was:
                self._selector.unregister(connection.sock)
            return
        if was == events:
            return
        self._connections[connection] = events
        if was and events:
            self._selector.modify(connection.sock, events, connection)
        elif was:
            self._selector.unregister(connection.sock)
        else:
            self._selector.register(connection.sock, events, connection)

    def adopt(self, sock: socket.socket, tables: NamespaceTables | None) -> _Listening:
        listening = _Listening(sock, STEP_LISTENER, tables)
        sock.setblocking(False)
        self.call(lambda: self._selector.register(sock, selectors.EVENT_READ, listening))
        return listening

    def give_back(self, listening: _Listening) -> None:
        """Stop accepting on an adopted listener and close it; its open connections go on being served."""
        def unregister() -> None:
            if not self._closed and listening.sock.fileno() >= 0:
                self._selector.unregister(listening.sock)
        self.call(unregister)
        listening.sock.close()


class FakeAPIServer:
    """Start in a background thread; `with FakeAPIServer(api) as server: server.base_url`."""

    def __init__(self, api: FakeModelAPI, port: int = 0):
        self.api = api
        self._server = EventLoop(api, port)
        api.own_addresses.update({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="fakeapi-loop", daemon=True)

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> "FakeAPIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.stop()
            self._thread.join(timeout=5)
        self._server.close()

    def adopt_listener(self, listener: "socket.socket", tables: NamespaceTables | None = None) -> AdoptedListener:
        """Also serve the connections accepted on `listener` (same script and journal) until `.close()`.

        For a step in a network namespace of its own (harness/isolation/netns.py): the listener was created
        there, on 127.0.0.1 at this server's port, and handed over; `tables` are that namespace's
        TCP tables, where the sending pid of its connections is looked up (harness/fakeapi/peer.py).
        """
        return AdoptedListener(self._server, listener, tables)

    def close(self) -> None:
        """Give up the port of a server that was never started."""
        self._server.close()

    def serve_forever(self) -> None:
        """Foreground serving for `harness serve`; returns on KeyboardInterrupt."""
        try:
            self._server.serve_forever(poll_interval=0.5)
        finally:
            self._server.close()

    def __enter__(self) -> "FakeAPIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
