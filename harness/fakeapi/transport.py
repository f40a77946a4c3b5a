"""What a transport hands the fake API and gets back: one request, one response.

The HTTP server (harness/fakeapi/server.py) and the in-process router
(harness/fakeapi/inprocess.py) both adapt their bytes to these, so the core
never sees a socket. A request also says which listener it arrived on: that,
with the sending pid, is how the core tells the running step's requests from
another local process's (`FakeModelAPI.handle`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from harness.fakeapi import faults

# Where a request's connection arrived (HTTPRequest.listener). None: no socket at all (in-process).
HOST_LISTENER = "host"  # the server's own listener on the host's 127.0.0.1: any local process can connect
STEP_LISTENER = "step namespace"  # a listener adopted from a step's network namespace: only the step can connect


@dataclass
class HTTPRequest:
    method: str
    target: str  # path with query string, as on the request line
    headers: list[tuple[str, str]]
    body: bytes = b""
    peer_pid: int | None = None
    via_proxy: bool = False  # sent as a proxy request (absolute URL) for this server's own address
    listener: str | None = None  # HOST_LISTENER, STEP_LISTENER, or None without a socket
    # One per connection (the server's), shared by its requests: whether its sender is the step's, by the step's
    # root pid, as first found (harness/fakeapi/sender.py). None: found afresh for every request.
    step_membership: dict[int, bool | None] | None = None

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass
class HTTPResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: Iterable[bytes] | None = None  # set for streamed replies
    wire: faults.WireFault | None = None  # a scripted transport fault the server carries out on the socket

    def read_all(self) -> bytes:
        return b"".join(self.chunks) if self.chunks is not None else self.body
