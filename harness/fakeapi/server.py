"""The fake model API on a real socket: HTTP/1.1 on 127.0.0.1, keep-alive, one thread per connection.

Only adapts bytes to FakeModelAPI.handle; streamed replies go out with chunked
transfer encoding so connections stay open between requests.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.fakeapi.peer import pid_of_peer

LOOPBACK = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "harness-fakeapi/0.1"
    timeout = 600  # an idle keep-alive connection is dropped eventually, never held forever
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
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        try:
            if response.chunks is None:
                self.send_header("content-length", str(len(response.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(response.body)
            else:
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for chunk in response.chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: socketserver's default of 5 resets bursts of parallel connects

    def __init__(self, api: FakeModelAPI, port: int):
        self.api = api
        super().__init__((LOOPBACK, port), _Handler)


class FakeAPIServer:
    """Start in a background thread; `with FakeAPIServer(api) as server: server.base_url`."""

    def __init__(self, api: FakeModelAPI, port: int = 0):
        self.api = api
        self._server = _Server(api, port)
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
