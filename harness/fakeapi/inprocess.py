"""The fake model API without a socket: httpx transports whose requests respx routes to FakeModelAPI.

For agents run inside the harness process (the `+in-process` modes of the
pydantic-ai and reference targets). Every request, whichever client sent it,
becomes an `httpx.Request` routed by a respx router that knows only the fake
API's base URL (anything else is refused by respx as not mocked), and is
answered by the very `FakeModelAPI.handle` the HTTP server calls, so script,
classification and journal are the same in every mode.

Two transports share that router and the fault imitation below:
- `RespxTransport`, async, for `httpx2` clients: the model SDKs pydantic-ai
  drives (openai, anthropic) are clients of httpx2, while respx routes httpx;
- `SyncRespxTransport`, for a sync `httpx.Client` (the reference agent's
  in-process connection, harness/reference_agent/httpx_connection.py).

Scripted transport faults are imitated at the client's side of the seam, where
the socket would have failed, as the server carries them out
(harness/fakeapi/faults.py): a cut stream delivers the bytes it let through and
then raises `RemoteProtocolError`, as a connection closed before the body's end
does (also when it let every event through: the terminating chunk never came);
a reset raises `ReadError` with no response; a slow first byte sleeps (up to the
client's read timeout, then `ReadTimeout`).
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterator

import httpx
import httpx2
import respx
from respx.models import AllMockedAssertionError

from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.fakeapi.faults import WireFault

_CHUNKS = "harness_chunks"  # extensions of the respx response carrying what the bridge needs beyond the bytes
_WIRE = "harness_wire"

CUT = "in-process fake API: peer closed connection without sending complete message body"
RESET = "in-process fake API: connection reset by peer (scripted)"
NO_FIRST_BYTE = "in-process fake API: no first byte within the read timeout"
NOT_MOCKED = "in-process fake API: {}"


def make_router(api: FakeModelAPI, base_url: str) -> respx.Router:
    """A respx router with one route: every method and path under `base_url`, answered by the fake API."""
    return _make_router(lambda: api, base_url)


# Routers already made, per fake API and base URL. Building one cost about 5% of an in-process reference
# step (respx makes mocks for its call lists, which inspect every attribute of their spec), and an
# in-process run asks for the same one at every step. Weak keys: the router refers to its API only
# weakly, so a run's API and router go together when the run is over.
_ROUTERS: "weakref.WeakKeyDictionary[FakeModelAPI, dict[str, respx.Router]]" = weakref.WeakKeyDictionary()


def router_for(api: FakeModelAPI, base_url: str) -> respx.Router:
    """The router make_router would make, made once per API and base URL; its call records are cleared."""
    routers = _ROUTERS.setdefault(api, {})
    router = routers.get(base_url)
    if router is None:
        router = routers[base_url] = _make_router(weakref.ref(api), base_url)
    else:
        router.reset()  # respx's record of earlier calls: nothing reads it, and it would only grow
    return router


def _make_router(api_ref: Callable[[], FakeModelAPI | None], base_url: str) -> respx.Router:
    router = respx.Router(assert_all_called=False, assert_all_mocked=True, base_url=base_url)

    def answer(request: httpx.Request) -> httpx.Response:
        api = api_ref()
        if api is None:  # the run is over: nothing answers any more, as a closed server would not
            raise httpx.ConnectError(NOT_MOCKED.format("the fake API of this run is gone"), request=request)
        response = api.handle(HTTPRequest(
            method=request.method,
            target=request.url.raw_path.decode("ascii"),
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
            body=request.content,
            peer_pid=os.getpid(),  # the agent is this process
        ))
        chunks = list(response.chunks) if response.chunks is not None else None
        body = b"".join(chunks) if chunks is not None else response.body
        return httpx.Response(response.status, headers=response.headers, content=body,
                              extensions={_CHUNKS: chunks, _WIRE: response.wire})

    router.route().mock(side_effect=answer)
    return router


# ------------------------------------------------------------------ what the client sees: shared by both transports


@dataclass(frozen=True)
class Delivery:
    """What reaches the client of one answered request, once its scripted fault (if any) is carried out."""

    status: int
    headers: list[tuple[bytes, bytes]]
    chunks: list[bytes]  # the body bytes that arrive, in order
    cut: bool  # then the connection closes with the body incomplete
    delay_s: float  # nothing arrives for this long first
    reset: bool  # nothing arrives at all: the connection is reset

    def first_byte_wait(self, read_timeout: float | None) -> tuple[float, bool]:
        """How long the client waits for the status line, and whether its read timeout ends the wait."""
        if not self.delay_s:
            return 0.0, False
        if read_timeout is not None and read_timeout < self.delay_s:
            return read_timeout, True
        return self.delay_s, False


def delivery(answered: httpx.Response) -> Delivery:
    """The router's answer as the socket would have carried it (harness/fakeapi/server.py `_write_response`)."""
    wire: WireFault | None = answered.extensions.get(_WIRE)
    chunks: list[bytes] | None = answered.extensions.get(_CHUNKS)
    wire = wire or WireFault()
    cut = False
    if chunks is not None:
        if wire.cut_after_chunks is not None:
            chunks, cut = chunks[:wire.cut_after_chunks], True
    else:
        chunks = [answered.content]
        if wire.cut_after_bytes is not None:
            chunks, cut = [answered.content[:wire.cut_after_bytes]], True
    return Delivery(answered.status_code, list(answered.headers.raw), chunks, cut, wire.delay_s, wire.reset)


def _read_timeout(request: httpx.Request | httpx2.Request) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


# ------------------------------------------------------------------ async: httpx2 clients (pydantic-ai's SDKs)


class RespxTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends nothing on the network: requests go through a respx router."""

    def __init__(self, router: respx.Router):
        self.router = router

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        legacy = httpx.Request(request.method, str(request.url), headers=list(request.headers.raw), content=body)
        try:
            answered = await self.router.async_handler(legacy)
        except AllMockedAssertionError as exc:
            raise httpx2.ConnectError(NOT_MOCKED.format(exc), request=request) from None
        sent = delivery(answered)
        wait, times_out = sent.first_byte_wait(_read_timeout(request))
        if wait:
            await asyncio.sleep(wait)
        if times_out:
            raise httpx2.ReadTimeout(NO_FIRST_BYTE, request=request)
        if sent.reset:
            raise httpx2.ReadError(RESET, request=request)
        return httpx2.Response(sent.status, headers=sent.headers, stream=_AsyncStream(sent), request=request)


class _AsyncStream(httpx2.AsyncByteStream):
    def __init__(self, sent: Delivery):
        self._sent = sent

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._sent.chunks:
            yield chunk
        if self._sent.cut:
            raise httpx2.RemoteProtocolError(CUT)

    async def aclose(self) -> None:
        pass


def http_client(api: FakeModelAPI, base_url: str) -> httpx2.AsyncClient:
    """The client an in-process agent's provider gets; proxies from the environment are never consulted."""
    return httpx2.AsyncClient(transport=RespxTransport(make_router(api, base_url)), trust_env=False)


# ------------------------------------------------------------------ sync: httpx.Client (the reference agent)


class StepExpired(BaseException):
    """The in-process step's time ran out while it waited on the fake API: what killing its process would end.

    A BaseException, so that no `except Exception` in the agent can take it for a failed request."""


class SyncRespxTransport(httpx.BaseTransport):
    """A sync httpx transport that sends nothing on the network: requests go through a respx router.

    `deadline` (time.monotonic()) is the step's: a request after it, or a wait for a first byte that
    would outlast it, raises StepExpired.
    """

    def __init__(self, router: respx.Router, deadline: float | None = None):
        self.router = router
        self.deadline = deadline

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._check_deadline()
        request.read()
        try:
            answered = self.router.handler(request)
        except AllMockedAssertionError as exc:
            raise httpx.ConnectError(NOT_MOCKED.format(exc), request=request) from None
        sent = delivery(answered)
        wait, times_out = sent.first_byte_wait(_read_timeout(request))
        if wait:
            left = self.deadline - time.monotonic() if self.deadline is not None else None
            if left is not None and left < wait:
                time.sleep(max(0.0, left))
                raise StepExpired()
            time.sleep(wait)
        if times_out:
            raise httpx.ReadTimeout(NO_FIRST_BYTE, request=request)
        if sent.reset:
            raise httpx.ReadError(RESET, request=request)
        return httpx.Response(sent.status, headers=sent.headers, stream=_SyncStream(sent), request=request)

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise StepExpired()


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, sent: Delivery):
        self._sent = sent

    def __iter__(self) -> Iterator[bytes]:
        yield from self._sent.chunks
        if self._sent.cut:
            raise httpx.RemoteProtocolError(CUT)

    def close(self) -> None:
        pass
