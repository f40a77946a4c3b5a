"""HTTP transport for the Anthropic Messages API, stdlib only.

One keep-alive connection per process, like a real CLI: the fake API can then
see (and the harness can judge) how many connections a run opened. The cache
breakpoint on the last message is added here, at send time, so it can never
leak into the persisted history.

The client's logic (headers, one retry on a stale kept-alive connection, reading
the reply) is written once, over a `Connection`: the stdlib http.client one by
default; the harness's in-process mode passes another that speaks the same
requests through httpx (httpx_connection.py), so both modes send the same bytes
and read replies with the same code.
"""

from __future__ import annotations

import copy
import http.client
import json
from collections.abc import Callable, Iterator
from typing import Protocol
from urllib.parse import urlsplit

from .errors import ApiError, ProtocolError, UsageError
from .sse import MessageAccumulator, SSEDecoder

ANTHROPIC_VERSION = "2023-06-01"
USER_AGENT = "reference-agent/0.1"
MAX_TOKENS = 1024
_STALE_CONNECTION = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def with_cache_breakpoint(messages: list[dict]) -> list[dict]:
    """A deep copy whose last content block of the last message is marked ephemeral."""
    marked = copy.deepcopy(messages)
    if marked:
        last = marked[-1]
        if isinstance(last.get("content"), str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        if last["content"]:
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return marked


def build_request_body(
    *, model: str, system: list[dict], messages: list[dict], tools: list[dict] | None, stream: bool
) -> dict:
    body = {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "stream": stream,
        "system": system,
    }
    if tools is not None:
        body["tools"] = tools
    body["messages"] = with_cache_breakpoint(messages)
    return body


def request_headers(api_key: str) -> dict[str, str]:
    """The headers the agent sets itself (the connection adds Host, Accept-Encoding and Content-Length)."""
    return {
        "x-api-key": api_key,
        "anthropic-version": ANTHROPIC_VERSION,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


class TransportFailure(Exception):
    """The connection failed under a request or its reply; `stale` when the peer closed a kept-alive
    connection before answering (the one case worth a retry)."""

    def __init__(self, cause: BaseException, *, stale: bool = False):
        super().__init__(repr(cause))
        self.cause = cause
        self.stale = stale


class Response(Protocol):
    status: int

    def read(self) -> bytes:
        """The whole body; raises TransportFailure."""
        ...

    def read_chunks(self) -> Iterator[bytes]:
        """The body as it arrives, to its end; raises TransportFailure."""
        ...


class Connection(Protocol):
    def send(self, path: str, payload: bytes, headers: dict[str, str]) -> Response:
        """POST path; the response once its status line arrived. Raises TransportFailure."""
        ...

    def close(self) -> None: ...


# (scheme, host, port, timeout) -> an unopened connection
ConnectionFactory = Callable[[str, str, "int | None", float], Connection]


class HTTPClientConnection:
    """One http.client connection, opened on the first request and kept alive."""

    def __init__(self, scheme: str, host: str, port: int | None, timeout: float):
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        self._conn = cls(host, port, timeout=timeout)

    def send(self, path: str, payload: bytes, headers: dict[str, str]) -> Response:
        try:
            self._conn.request("POST", path, body=payload, headers=headers)
            return _HTTPClientResponse(self._conn.getresponse())
        except _STALE_CONNECTION as exc:
            raise TransportFailure(exc, stale=True) from None
        except (OSError, http.client.HTTPException) as exc:
            raise TransportFailure(exc) from None

    def close(self) -> None:
        self._conn.close()


class _HTTPClientResponse:
    def __init__(self, response: http.client.HTTPResponse):
        self._response = response
        self.status = response.status

    def read(self) -> bytes:
        try:
            return self._response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise TransportFailure(exc) from None

    def read_chunks(self) -> Iterator[bytes]:
        try:
            while chunk := self._response.read1(65536):
                yield chunk
            # read1 never marks a Content-Length response finished; read() does, which
            # is what lets the next request reuse this keep-alive connection.
            yield self._response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise TransportFailure(exc) from None


def read_message(response: Response, *, stream: bool) -> dict:
    """The final assistant message of a reply, streamed (SSE) or not; ApiError/ProtocolError otherwise."""
    if response.status >= 400:
        text = response.read().decode("utf-8", errors="replace")
        raise ApiError(f"API returned HTTP {response.status}: {text}")
    if not stream:
        text = response.read().decode("utf-8", errors="replace")
        try:
            message = json.loads(text)
        except json.JSONDecodeError:
            raise ProtocolError(f"response is not JSON (HTTP {response.status}): {text!r}") from None
        if not isinstance(message, dict):
            raise ProtocolError(f"response is not a JSON object: {text!r}")
        if message.get("type") == "error":
            raise ApiError(f"API returned an error (HTTP {response.status}): {text}")
        if not isinstance(message.get("content"), list):
            raise ProtocolError(f"response has no content list: {text!r}")
        return message
    decoder, acc = SSEDecoder(), MessageAccumulator()
    for chunk in response.read_chunks():
        for event in decoder.feed(chunk):
            acc.feed(event)
    for event in decoder.close():
        acc.feed(event)
    return acc.result()


class MessagesClient:
    """POST {base}/v1/messages; returns the final assistant message as a dict."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0, connect: ConnectionFactory | None = None):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"ANTHROPIC_BASE_URL is not an http(s) URL: {base_url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        try:
            self._port = parts.port
        except ValueError:
            raise UsageError(f"ANTHROPIC_BASE_URL has a bad port: {base_url!r}") from None
        self.path = parts.path.rstrip("/") + "/v1/messages"
        self._api_key = api_key
        self._timeout = timeout
        self._connect: ConnectionFactory = connect or HTTPClientConnection
        self._conn: Connection | None = None
        self._used = 0  # requests sent on the current connection
        self.requests_sent = 0

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._connect(self._scheme, self._host, self._port, self._timeout)
            self._used = 0
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def create(self, body: dict) -> dict:
        payload = json.dumps(body).encode("utf-8")
        headers = request_headers(self._api_key)
        self.requests_sent += 1
        for attempt in (1, 2):
            conn = self._connection()
            reused = self._used > 0
            try:
                response = conn.send(self.path, payload, headers)
            except TransportFailure as exc:
                self.close()
                if exc.stale and reused and attempt == 1:
                    continue  # the server closed an idle keep-alive connection; retry once
                raise ApiError(f"connection to {self._host}:{self._port} failed: {exc.cause!r}") from None
            self._used += 1
            try:
                return read_message(response, stream=bool(body.get("stream")))
            except TransportFailure as exc:
                self.close()
                raise ApiError(f"reading the response failed: {exc.cause!r}") from None
            except ApiError:
                self.close()  # an unread remainder would poison the next request
                raise
        raise AssertionError("unreachable")
