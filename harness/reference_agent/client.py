"""HTTP transport for the Anthropic Messages API, stdlib only.

One keep-alive connection per process, like a real CLI: the fake API can then
see (and the harness can judge) how many connections a run opened. The cache
breakpoint on the last message is added here, at send time, so it can never
leak into the persisted history.
"""

from __future__ import annotations

import copy
import http.client
import json
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


class MessagesClient:
    """POST {base}/v1/messages; returns the final assistant message as a dict."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0):
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
        self._conn: http.client.HTTPConnection | None = None
        self._used = 0  # requests sent on the current connection
        self.requests_sent = 0

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self._timeout)
            self._used = 0
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def create(self, body: dict) -> dict:
        payload = json.dumps(body).encode("utf-8")
        headers = {
            "x-api-key": self._api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "user-agent": USER_AGENT,
        }
        self.requests_sent += 1
        for attempt in (1, 2):
            conn = self._connection()
            reused = self._used > 0
            try:
                conn.request("POST", self.path, body=payload, headers=headers)
                response = conn.getresponse()
            except _STALE_CONNECTION as exc:
                self.close()
                if reused and attempt == 1:
                    continue  # the server closed an idle keep-alive connection; retry once
                raise ApiError(f"connection to {self._host}:{self._port} failed: {exc!r}") from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise ApiError(f"connection to {self._host}:{self._port} failed: {exc!r}") from None
            self._used += 1
            try:
                return self._read(response, stream=bool(body.get("stream")))
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise ApiError(f"reading the response failed: {exc!r}") from None
            except ApiError:
                self.close()  # an unread remainder would poison the next request
                raise
        raise AssertionError("unreachable")

    def _read(self, response: http.client.HTTPResponse, *, stream: bool) -> dict:
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
        while chunk := response.read1(65536):
            for event in decoder.feed(chunk):
                acc.feed(event)
        # read1 never marks a Content-Length response finished; read() does, which
        # is what lets the next request reuse this keep-alive connection.
        for event in decoder.feed(response.read()):
            acc.feed(event)
        for event in decoder.close():
            acc.feed(event)
        return acc.result()
