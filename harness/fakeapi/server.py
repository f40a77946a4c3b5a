"""The fake model API on a real socket: HTTP/1.1 on 127.0.0.1, keep-alive, one thread per connection.

Only adapts bytes to FakeModelAPI.handle; streamed replies go out with chunked
transfer encoding so connections stay open between requests.
"""

from __future__ import annotations

import os
import select
import selectors
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness.fakeapi.core import FakeModelAPI, HTTPRequest, HTTPResponse
from harness.fakeapi.peer import NamespaceTables, connections_from, pid_of_peer

LOOPBACK = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "harness-fakeapi/0.1"
    timeout = 600  # an idle keep-alive connection is dropped eventually, never held forever
    # A streamed reply is many small writes (the headers, then a chunk per event). With Nagle's algorithm each
    # write after the first waited for the client's delayed ACK: about 40 ms per reply on a kept-alive
    # connection (measured by `make bench`), where a real API's stream arrives at once.
    disable_nagle_algorithm = True
    server: "_Server"

    def setup(self) -> None:
        super().setup()
        self._peer_pid: int | None = None
        self._peer_looked_up = False

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet by design
        pass

    def do_POST(self) -> None:
        self._dispatch()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_POST

    def do_CONNECT(self) -> None:
        """A tunnel request through the proxy variables: answered, journaled, never opened."""
        self._dispatch()
        self.close_connection = True

    def _dispatch(self) -> None:
        body = self._read_body()
        if body is None:
            return
        if not self._peer_looked_up:
            self._peer_looked_up = True
            api = self.server.api
            self._peer_pid = pid_of_peer(self.client_address[1], self.server.server_address[1], [api.step_pid or 0])
        request = HTTPRequest(self.command, self.path, list(self.headers.items()), body, self._peer_pid)
        response = self.server.api.handle(request)
        self._write_response(response)

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
                    self.wfile.flush()
                if cut_chunks is None:
                    self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
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

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            parts = []
            while True:
                size_line = self.rfile.readline(65537)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    self.send_error(400, "bad chunked body")
                    return None
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(3)
        length = self.headers.get("content-length")
        if length is None:
            return b""
        try:
            return self.rfile.read(int(length))
        except ValueError:
            self.send_error(400, "bad content-length")
            return None


class _Wakeup:
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: socketserver's default of 5 resets bursts of parallel connects

    def __init__(self, api: FakeModelAPI, port: int):
        self.api = api
        self._wakeup = _Wakeup()
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()  # as socketserver's: shutdown() waits for a loop to have run and ended
        try:
            super().__init__((LOOPBACK, port), _Handler)
        except BaseException:
            self._wakeup.close()
            raise

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


class _AdoptedListener:
    """One listening socket handed to the server (FakeAPIServer.adopt_listener), accepted on in a thread of its own."""

    def __init__(self, server: _Server, listener: "socket.socket", tables: NamespaceTables | None):
        self._server, self._listener, self._tables = server, listener, tables
        self._closed = threading.Event()
        self._wakeup = _Wakeup()
        listener.setblocking(False)
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

    def _serve(self, conn: "socket.socket", address: tuple) -> None:
        """As ThreadingHTTPServer serves its own connections, with peers looked up in the listener's namespace."""
        with connections_from(self._tables):
            try:
                self._server.finish_request(conn, address)
            except Exception:
                self._server.handle_error(conn, address)
            finally:
                self._server.shutdown_request(conn)

    def close(self) -> None:
        """Stop accepting, join the accepting thread, close the listener; open connections finish on their own."""
        self._closed.set()
        self._wakeup.wake()
        self._thread.join(timeout=5)
        self._listener.close()
        if not self._thread.is_alive():
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

    def adopt_listener(self, listener: "socket.socket", tables: NamespaceTables | None = None) -> _AdoptedListener:
        """Also serve the connections accepted on `listener` (same handler, script and journal) until `.close()`.

        For a step in a network namespace of its own (harness/netns.py): the listener was created
        there, on 127.0.0.1 at this server's port, and handed over; `tables` are that namespace's
        TCP tables, where the sending pid of its connections is looked up (harness/fakeapi/peer.py).
        """
        return _AdoptedListener(self._server, listener, tables)

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
