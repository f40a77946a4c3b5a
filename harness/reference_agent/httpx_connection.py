"""The Messages client's connection over a sync `httpx.Client`: the harness's in-process seam.

Not used when the agent runs as a command (it stays stdlib only there): the
harness's in-process mode (in_process.py) hands `MessagesClient` this connection,
over an httpx.Client whose transport routes through respx to the fake API
(harness/fakeapi/inprocess.py). Everything above the connection (body, the
agent's headers, the retry on a stale connection, reading JSON and SSE replies)
is the same code as in the command; this class only sends the request as
http.client would put it on the wire (Host, Accept-Encoding: identity,
Content-Length, then the agent's headers, in that order) and maps httpx's
failures to the ones http.client would have raised.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from .client import Response, TransportFailure

# Raised before any response: what http.client reports as RemoteDisconnected / ConnectionResetError / BrokenPipeError.
_STALE = (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_header(scheme: str, host: str, port: int | None) -> str:
    """The Host header http.client sends: the port only when it is not the scheme's default, IPv6 in brackets."""
    shown = f"[{host}]" if ":" in host else host
    port = port if port is not None else _DEFAULT_PORTS[scheme]
    return shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"


class HttpxConnection:
    """A `client.Connection` over an httpx.Client (which it does not own: the caller closes it)."""

    def __init__(self, client: httpx.Client, scheme: str, host: str, port: int | None, timeout: float):
        self._client = client
        self._host = host_header(scheme, host, port)
        self._origin = f"{scheme}://{self._host}"
        self._timeout = httpx.Timeout(timeout).as_dict()

    def send(self, path: str, payload: bytes, headers: dict[str, str]) -> Response:
        request = httpx.Request(
            "POST",
            self._origin + path,
            headers=[
                ("Host", self._host),
                ("Accept-Encoding", "identity"),
                ("Content-Length", str(len(payload))),
                *headers.items(),
            ],
            content=payload,
            extensions={"timeout": self._timeout},
        )
        try:
            return _HttpxResponse(self._client.send(request, stream=True))
        except _STALE as exc:
            raise TransportFailure(exc, stale=True) from None
        except httpx.TransportError as exc:
            raise TransportFailure(exc) from None

    def close(self) -> None:
        pass  # the next request is a new connection to the transport anyway


class _HttpxResponse:
    def __init__(self, response: httpx.Response):
        self._response = response
        self.status = response.status_code

    def read(self) -> bytes:
        return b"".join(self.read_chunks())

    def read_chunks(self) -> Iterator[bytes]:
        try:
            yield from self._response.iter_raw()
        except httpx.TransportError as exc:
            raise TransportFailure(exc) from None
        finally:
            self._response.close()
