"""The fake model API without a socket: an httpx2 transport whose requests respx routes to FakeModelAPI.

For agents run inside the harness process (the pydantic-ai target's `+in-process`
mode). The model SDKs pydantic-ai drives (openai, anthropic) are clients of
`httpx2`, while respx routes `httpx` requests; this module is the seam between
the two: each request is converted to an `httpx.Request`, routed by a respx
router that knows only the fake API's base URL (anything else is refused by
respx as not mocked), and answered by the very `FakeModelAPI.handle` the HTTP
server calls, so script, classification and journal are the same in both modes.

Scripted transport faults are imitated at the client's side of the seam, where
the socket would have failed: a cut stream raises `RemoteProtocolError` after
the bytes it let through, a reset raises `ReadError` with no response, a slow
first byte sleeps (up to the client's read timeout, then `ReadTimeout`).
"""

from __future__ import annotations

import asyncio
import os
from typing import AsyncIterator

import httpx
import httpx2
import respx
from respx.models import AllMockedAssertionError

from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.fakeapi.faults import WireFault

_CHUNKS = "harness_chunks"  # extensions of the respx response carrying what the bridge needs beyond the bytes
_WIRE = "harness_wire"


def make_router(api: FakeModelAPI, base_url: str) -> respx.Router:
    """A respx router with one route: every method and path under `base_url`, answered by the fake API."""
    router = respx.Router(assert_all_called=False, assert_all_mocked=True, base_url=base_url)

    def answer(request: httpx.Request) -> httpx.Response:
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
            raise httpx2.ConnectError(f"in-process fake API: {exc}", request=request) from None
        wire: WireFault | None = answered.extensions.get(_WIRE)
        chunks: list[bytes] | None = answered.extensions.get(_CHUNKS)
        if wire is not None and wire.delay_s:
            read_timeout = (request.extensions.get("timeout") or {}).get("read")
            if read_timeout is not None and read_timeout < wire.delay_s:
                await asyncio.sleep(read_timeout)
                raise httpx2.ReadTimeout("in-process fake API: no first byte within the read timeout", request=request)
            await asyncio.sleep(wire.delay_s)
        if wire is not None and wire.reset:
            raise httpx2.ReadError("in-process fake API: connection reset by peer (scripted)", request=request)
        return httpx2.Response(
            answered.status_code,
            headers=list(answered.headers.raw),
            stream=_FaultyStream(chunks if chunks is not None else [answered.content], wire, chunks is not None),
            request=request,
        )


class _FaultyStream(httpx2.AsyncByteStream):
    """The reply's bytes, chunk by chunk, ending as the scripted fault would have ended the connection."""

    def __init__(self, chunks: list[bytes], wire: WireFault | None, chunked: bool):
        self._chunks, self._wire, self._chunked = chunks, wire, chunked

    async def __aiter__(self) -> AsyncIterator[bytes]:
        wire = self._wire
        cut_chunks = wire.cut_after_chunks if wire is not None else None
        cut_bytes = wire.cut_after_bytes if wire is not None else None
        if cut_bytes is not None and not self._chunked:
            yield self._chunks[0][:cut_bytes]
            raise httpx2.RemoteProtocolError("in-process fake API: peer closed connection without sending complete message body")
        for sent, chunk in enumerate(self._chunks):
            if sent == cut_chunks:
                raise httpx2.RemoteProtocolError("in-process fake API: peer closed connection without sending complete message body")
            yield chunk

    async def aclose(self) -> None:
        pass


def http_client(api: FakeModelAPI, base_url: str) -> httpx2.AsyncClient:
    """The client an in-process agent's provider gets; proxies from the environment are never consulted."""
    return httpx2.AsyncClient(transport=RespxTransport(make_router(api, base_url)), trust_env=False)
