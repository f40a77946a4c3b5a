"""Accepting besides the server's own loop: a listener adopted from a step's network namespace, and the
wake-up pipe that stops a polling loop at once.

A step in a network namespace of its own (harness/isolation/netns.py) hands over a
listener created there; its connections are accepted here, in a thread of
their own, and served by the same server (script, journal), with the sending
pid looked up in that namespace's tables. While one is open the fake API
knows a namespaced step is running (FakeModelAPI.step_listener_opened): only
that step's processes can reach this listener, so a connection on the host's
is not the step's (harness/fakeapi/sender.py).
"""

from __future__ import annotations

import os
import select
import socket
import socketserver
import threading

from harness.fakeapi.peer import NamespaceTables, connections_from


class Wakeup:
    """A pipe a polling loop also watches, so that stopping it takes effect at once, not at its next timeout.

    Stopping used to wait out the loops' 50 ms polls: about a tenth of a reference-agent scenario's wall
    time went to that (up to 50 ms per step for the namespace's listener, up to 50 ms per run for the server).
    """

    def __init__(self) -> None:
        self.fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)

    def wake(self) -> None:
        try:
            os.write(self._write_fd, b"x")
        except (BlockingIOError, OSError):  # already woken (the pipe is full), or closed
            pass

    def drain(self) -> None:
        try:
            os.read(self.fd, 4096)
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self.fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


class AdoptedListener:
    """One listening socket handed to the server (FakeAPIServer.adopt_listener), accepted on in a thread of its own."""

    def __init__(self, server: "socketserver.BaseServer", listener: socket.socket, tables: NamespaceTables | None,
                 handler: type[socketserver.BaseRequestHandler]):
        self._server, self._listener, self._tables, self._handler = server, listener, tables, handler
        self._closed = threading.Event()
        self._wakeup = Wakeup()
        listener.setblocking(False)
        server.api.step_listener_opened()  # from now on, the host's listener is not the step's way in
        self._thread = threading.Thread(target=self._accept, name="fakeapi-adopted-listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        poller = select.poll()
        poller.register(self._listener, select.POLLIN)
        poller.register(self._wakeup.fd, select.POLLIN)
        while not self._closed.is_set():
            if not poller.poll(50) or self._closed.is_set():
                continue
            try:
                conn, address = self._listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError:
                return
            conn.setblocking(True)
            threading.Thread(target=self._serve, args=(conn, address), daemon=True).start()

    def _serve(self, conn: socket.socket, address: tuple) -> None:
        """As ThreadingHTTPServer serves its own connections, with peers looked up in the listener's namespace."""
        with connections_from(self._tables):
            try:
                self._handler(conn, address, self._server)
            except Exception:
                self._server.handle_error(conn, address)
            finally:
                self._server.shutdown_request(conn)

    def close(self) -> None:
        """Stop accepting, join the accepting thread, close the listener; open connections finish on their own."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._server.api.step_listener_opened(False)
        self._wakeup.wake()
        self._thread.join(timeout=5)
        self._listener.close()
        if not self._thread.is_alive():
            self._wakeup.close()
