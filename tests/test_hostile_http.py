"""The fake API under hostile HTTP: raw bytes over a real socket to a real FakeAPIServer.

Whatever arrives, the server answers with a well-formed HTTP response (a 4xx
in the provider's error shape, then a closed connection, for framing it cannot
read), journals it (class `malformed` when unreadable), never prints a
traceback from any of its threads, never fails on its own (no 5xx), never
holds more than a request has sent, and leaves its journal valid JSONL. Named
cases first, then a Hypothesis property over mutated valid requests (bounded
under the `ci` profile, longer under HYPOTHESIS_PROFILE=deep).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.http_framing import MAX_BODY_BYTES, MAX_HEADERS, MAX_LINE_BYTES
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer

MESSAGES = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module (the property sends hundreds of requests); its thread failures are collected."""
    path = tmp_path_factory.mktemp("hostile") / "journal.jsonl"
    api = FakeModelAPI(Journal(path))
    failures: list[str] = []
    previous = threading.excepthook
    threading.excepthook = lambda hook: failures.append(f"{hook.thread}: {hook.exc_type.__name__}: {hook.exc_value}")
    try:
        with FakeAPIServer(api) as server:
            yield Served(api, server, path, failures)
    finally:
        threading.excepthook = previous
        api.journal.close()


@dataclass
class Served:
    api: FakeModelAPI
    server: FakeAPIServer
    path: Path
    thread_failures: list[str]
    checked_bytes: int = 0  # how much of the journal file was found valid JSONL so far

    def new_journal_lines(self) -> list[dict]:
        """The lines appended since the last call, each valid JSON, the file still ending in a complete line."""
        with self.path.open("rb") as handle:
            handle.seek(self.checked_bytes)
            raw = handle.read()
        assert raw == b"" or raw.endswith(b"\n"), raw[-200:]
        self.checked_bytes += len(raw)
        return [json.loads(line) for line in raw.split(b"\n") if line]

    @property
    def port(self) -> int:
        return self.server.port


# --------------------------------------------------------------------------- the client side, independent of the server's code


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    closed_after: bool  # the server closed the connection once this response was sent


def exchange_raw(port: int, raw: bytes, *, half_close: bool = True, timeout: float = 60) -> bytes:
    """Send `raw`, then (by default) end the sending side, and read everything until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(raw)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):  # refused before it read everything: the answer is still there
            pass
        received = bytearray()
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            received += data
        return bytes(received)


def parse_responses(data: bytes, head_request: bool) -> list[Response]:
    """Every response in `data`, strictly: status line, headers, then exactly the body its framing announces."""
    responses = []
    while data:
        head, sep, data = data.partition(b"\r\n\r\n")
        assert sep, f"a response head without its end: {head[:300]!r}"
        status_line, *lines = head.split(b"\r\n")
        version, status, _reason = (status_line.decode("latin-1") + " ").split(" ", 2)
        assert version == "HTTP/1.1" and status.isdigit() and len(status) == 3, status_line
        headers: dict[str, str] = {}
        for line in lines:
            name, colon, value = line.decode("latin-1").partition(":")
            assert colon and name and name == name.strip(), line
            headers[name.lower()] = value.strip()
        if int(status) == 100:
            continue  # an interim 100 Continue: the final response follows
        if head_request and len(data) != int(headers.get("content-length", -1)):
            body = b""  # a HEAD's answer has no body (unless the server could not tell it was a HEAD: then it has)
        elif headers.get("transfer-encoding") == "chunked":
            body, data = _dechunk(data)
        else:
            length = int(headers["content-length"])
            assert len(data) >= length, f"the body is shorter than its content-length: {len(data)} < {length}"
            body, data = data[:length], data[length:]
        responses.append(Response(int(status), headers, body, closed_after=not data))
    return responses


def _dechunk(data: bytes) -> tuple[bytes, bytes]:
    body = bytearray()
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        assert sep, "a chunked body without its terminating chunk"
        size = int(size_line, 16)
        if size == 0:
            assert data.startswith(b"\r\n"), data[:50]
            return bytes(body), data[2:]
        body += data[:size]
        assert data[size:size + 2] == b"\r\n"
        data = data[size + 2:]


def request(method: str = "POST", target: str = "/v1/messages", headers: list[tuple[str, str]] | None = None,
            body: bytes | None = None, version: str = "HTTP/1.1") -> bytes:
    body = json.dumps(MESSAGES).encode() if body is None else body
    headers = [("Host", "127.0.0.1"), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))] \
        if headers is None else headers
    head = f"{method} {target} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def refused(served: Served, raw: bytes, status: int, reason: str, *, half_close: bool = True, head: bool = False):
    """`raw` gets exactly one response, `status`, the connection closed after it, and one `malformed` exchange."""
    before = len(served.api.journal.exchanges())
    (response,) = parse_responses(exchange_raw(served.port, raw, half_close=half_close), head)
    assert response.status == status, response
    assert response.closed_after and response.headers.get("connection") == "close"
    if not head:
        assert reason in json.loads(response.body)["error"]["message"]
    (exchange,) = served.api.journal.exchanges()[before:]
    assert (exchange.klass, exchange.status) == ("malformed", status) and reason in exchange.error
    assert served.new_journal_lines()[-1]["error"] == exchange.error
    assert served.api.internal_errors == [] and served.thread_failures == []
    return response, exchange


# --------------------------------------------------------------------------- named cases


HUGE = "99999999999999999999"  # past 2**64: raised in the server's thread before this was read strictly

FRAMING = [
    ("overflowing-content-length", request(headers=[("Content-Length", HUGE)], body=b"{}"), 413, f"declares {HUGE} bytes"),
    ("4300-digit-content-length", request(headers=[("Content-Length", "9" * 5000)], body=b"{}"), 413, "(5000 digits)"),
    ("negative-content-length", request(headers=[("Content-Length", "-1")], body=b"{}"), 400, "Content-Length '-1'"),
    ("non-numeric-content-length", request(headers=[("Content-Length", "two")], body=b"{}"), 400, "'two' is not a number"),
    ("plus-signed-content-length", request(headers=[("Content-Length", "+2")], body=b"{}"), 400, "'+2' is not a number"),
    ("empty-content-length", request(headers=[("Content-Length", "")], body=b"{}"), 400, "'' is not a number"),
    ("conflicting-content-lengths", request(headers=[("Content-Length", "2"), ("Content-Length", "3")], body=b"{}"),
     400, "conflicting Content-Length values: 2, 3"),
    ("body-shorter-than-declared", request(headers=[("Content-Length", "100")], body=b'{"model"'), 400,
     "the body ended after 8 of its 100 bytes"),
    ("chunked-bad-size", request(headers=[("Transfer-Encoding", "chunked")], body=b"zz\r\n{}\r\n0\r\n\r\n"), 400,
     "bad chunk size line 'zz'"),
    ("chunked-size-too-small", request(headers=[("Transfer-Encoding", "chunked")], body=b"1\r\n{}\r\n0\r\n\r\n"), 400,
     "not followed by CRLF"),
    ("chunked-size-one-too-large", request(headers=[("Transfer-Encoding", "chunked")], body=b"3\r\n{}\r\n0\r\n\r\n"), 400,
     "not followed by CRLF"),
    ("chunked-without-last-chunk", request(headers=[("Transfer-Encoding", "chunked")], body=b"2\r\n{}\r\n"), 400,
     "closed inside a chunk size line"),
    ("chunked-cut-inside-a-chunk", request(headers=[("Transfer-Encoding", "chunked")], body=b"10\r\n{}"), 400,
     "the body ended after 2 of a chunk's 16 bytes"),
    ("chunked-and-content-length", request(headers=[("Transfer-Encoding", "chunked"), ("Content-Length", "7")],
                                           body=b"2\r\n{}\r\n0\r\n\r\n"), 400, "both Transfer-Encoding and Content-Length"),
    ("gzip-transfer-coding", request(headers=[("Transfer-Encoding", "gzip, chunked")], body=b"0\r\n\r\n"), 400,
     "Transfer-Encoding 'gzip, chunked' is not served"),
    ("chunked-over-http-1.0", request(headers=[("Transfer-Encoding", "chunked")], body=b"0\r\n\r\n", version="HTTP/1.0"),
     400, "Transfer-Encoding in an HTTP/1.0 request"),
    ("garbage-request-line", b"GARBAGE\r\n\r\n", 400, "unreadable request line 'GARBAGE'"),
    ("http-0.9-request-line", b"GET /\r\n", 400, "an HTTP/0.9 request line"),
    ("http-2-request-line", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "HTTP/2.0 is not served"),
    ("lower-case-version", request(version="http/1.1"), 400, "unknown protocol version 'http/1.1'"),
    ("two-spaces-in-request-line", b"POST  /v1/messages HTTP/1.1\r\n\r\n", 400, "unreadable request line"),
    ("method-not-a-token", request(method="PO(ST"), 400, "the method 'PO(ST' is not an HTTP token"),
    ("control-character-in-target", request(target="/v1/mess\x01ages"), 400, "the request target holds a control"),
    ("byte-outside-ascii-in-target", request(target="/v1/messagés"), 400, "outside visible ASCII"),
    ("header-without-colon", b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nnot a header\r\nContent-Length: 2\r\n\r\n{}", 400,
     "header line 'not a header' is not NAME: VALUE"),
    ("space-before-colon", b"POST /v1/messages HTTP/1.1\r\nContent-Length : 2\r\n\r\n{}", 400, "is not NAME: VALUE"),
    ("obsolete-line-folding", b"POST /v1/messages HTTP/1.1\r\nX-A: b\r\n  c\r\n\r\n", 400, "obsolete line folding"),
    ("nul-in-header-value", b"POST /v1/messages HTTP/1.1\r\nX-A: b\x00c\r\n\r\n", 400, "header 'X-A' holds a control"),
    ("cr-in-header-value", b"POST /v1/messages HTTP/1.1\r\nX-A: b\rc\r\n\r\n", 400, "header 'X-A' holds a control"),
    ("headers-cut-off-by-close", b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Len", 400,
     "the connection closed inside the headers"),
    ("request-line-cut-off-by-close", b"POST /v1/mess", 400, "the connection closed inside the request line"),
    ("too-many-headers", request(headers=[(f"X-{n}", "v") for n in range(MAX_HEADERS + 1)]), 431,
     f"more than {MAX_HEADERS} header lines"),
    ("header-line-too-long", request(headers=[("X-Long", "v" * MAX_LINE_BYTES)]), 431,
     f"a line of the headers is longer than {MAX_LINE_BYTES} bytes"),
    ("request-line-too-long", request(target="/" + "a" * MAX_LINE_BYTES), 414,
     f"the request line is longer than {MAX_LINE_BYTES} bytes"),
    ("unmet-expectation", request(headers=[("Expect", "200-ok"), ("Content-Length", "2")], body=b"{}"), 417,
     "Expect '200-ok' cannot be met"),
]


@pytest.mark.parametrize("raw,status,reason", [c[1:] for c in FRAMING], ids=[c[0] for c in FRAMING])
def test_unreadable_framing_is_a_journaled_4xx_and_a_closed_connection(served, raw, status, reason):
    refused(served, raw, status, reason)


def test_a_declared_10_gb_body_is_refused_before_a_byte_of_it_is_read(served):
    """The client sends the head only and waits: the 413 comes at once, not after 10 GB (nor any allocation of it)."""
    raw = request(headers=[("Content-Length", str(10 * 1000**3))], body=b"")
    response, exchange = refused(served, raw, 413, f"declares {10 * 1000**3} bytes; the fake API reads at most "
                                                  f"{MAX_BODY_BYTES}", half_close=False)
    assert json.loads(response.body)["error"]["type"] == "request_too_large"
    assert exchange.body == b""


def test_a_chunked_body_growing_past_the_limit_is_refused_while_the_client_still_sends(served):
    size = MAX_BODY_BYTES // 2 + 1
    chunk = b"%x\r\n%s\r\n" % (size, b"x" * size)
    raw = request(headers=[("Transfer-Encoding", "chunked")], body=chunk + chunk + b"0\r\n\r\n")
    _, exchange = refused(served, raw, 413, "the chunked body grows past")
    assert len(exchange.body) == size  # what it had read: the first chunk, never the second


def test_a_refusal_takes_the_error_shape_of_the_format_its_path_speaks(served):
    openai, _ = refused(served, request(target="/v1/chat/completions", headers=[("Content-Length", "x")]), 400,
                        "Content-Length 'x'")
    assert set(json.loads(openai.body)["error"]) == {"message", "type", "param", "code"}
    gemini, _ = refused(served, request(target="/v1beta/models/gemini-2.5-pro:generateContent",
                                        headers=[("Content-Length", "x")]), 400, "Content-Length 'x'")
    assert json.loads(gemini.body)["error"]["status"] == "INVALID_ARGUMENT"


def test_a_head_request_refused_gets_no_body(served):
    refused(served, b"HEAD / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400, "", head=True)


def test_expect_100_continue_is_honoured_and_blank_lines_before_a_request_are_skipped(served):
    raw = b"\r\n\r\n" + request(headers=[("Content-Length", str(len(json.dumps(MESSAGES)))), ("Expect", "100-continue")])
    data = exchange_raw(served.port, raw)
    assert data.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    (response,) = parse_responses(data, head_request=False)
    assert response.status == 200 and json.loads(response.body)["content"][0]["text"]


def test_after_a_refusal_nothing_pipelined_behind_it_is_served(served):
    before = len(served.api.journal.exchanges())
    data = exchange_raw(served.port, request(headers=[("Content-Length", "-1")], body=b"") + request())
    (response,) = parse_responses(data, head_request=False)
    assert response.status == 400 and response.closed_after
    assert len(served.api.journal.exchanges()) == before + 1


def test_a_failure_inside_the_fake_api_is_a_500_and_one_recorded_line_never_a_traceback(tmp_path, capfd):
    """A journal callback that raises stands for any bug behind FakeModelAPI.handle."""
    def broken(exchange) -> None:
        raise RuntimeError("a bug in the harness")

    api = FakeModelAPI(Journal(tmp_path / "journal.jsonl", on_append=broken))
    with FakeAPIServer(api) as server:
        (response,) = parse_responses(exchange_raw(server.port, request()), head_request=False)
    api.journal.close()
    assert response.status == 500 and response.closed_after
    (line,) = api.internal_errors
    assert line.startswith("the fake API failed on POST '/v1/messages': RuntimeError: a bug in the harness (")
    assert "\n" not in line and "Traceback" not in capfd.readouterr().err


def test_a_failure_of_the_connection_handler_is_recorded_never_printed(tmp_path, capfd):
    """socketserver's handle_error printed a traceback on stderr; a core that raises stands for a bug in the server."""
    class Crashing(FakeModelAPI):
        def handle(self, request):
            raise RuntimeError("a bug past the core's own guard")

    api = Crashing(Journal(tmp_path / "journal.jsonl"))
    with FakeAPIServer(api) as server:
        assert exchange_raw(server.port, request()) == b""  # nothing sensible to send: the connection is closed
    api.journal.close()
    (line,) = api.internal_errors
    assert "RuntimeError: a bug past the core's own guard" in line and "\n" not in line
    assert capfd.readouterr().err == ""


# --------------------------------------------------------------------------- the property


TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
FRAMING_NAMES = {"content-length", "transfer-encoding", "expect", "host"}  # set by the request itself
PATHS = ["/v1/messages", "/v1/messages/count_tokens", "/v1/models", "/v1/models/claude-sonnet-4-5",
         "/v1/chat/completions", "/v1/responses", "/v1beta/models/gemini-2.5-pro:generateContent",
         "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "/v1beta/models", "/", "/_harness/launches",
         "http://example.invalid/v1/messages", "https://example.invalid/"]
METHODS = ["POST", "POST", "POST", "GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "FOO"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=16)


@st.composite
def bodies(draw) -> bytes:
    kind = draw(st.sampled_from(["messages", "chat", "responses", "gemini", "json", "bytes", "empty", "huge"]))
    stream = draw(st.booleans())
    if kind == "messages":
        value = dict(MESSAGES, stream=stream, system=draw(st.text(max_size=40)))
    elif kind == "chat":
        value = {"model": "gpt-4.1", "stream": stream, "messages": [{"role": "user", "content": draw(st.text(max_size=40))}]}
    elif kind == "responses":
        value = {"model": "gpt-4.1", "stream": stream, "input": draw(st.text(max_size=40))}
    elif kind == "gemini":
        value = {"contents": [{"role": "user", "parts": [{"text": draw(st.text(max_size=40))}]}]}
    elif kind == "json":
        value = draw(json_values)
    elif kind == "bytes":
        return draw(st.binary(max_size=200))
    elif kind == "empty":
        return b""
    else:
        return json.dumps(dict(MESSAGES, system="x" * draw(st.integers(0, 300_000)))).encode()
    return json.dumps(value, ensure_ascii=draw(st.booleans())).encode()


@st.composite
def valid_requests(draw) -> dict:
    """A request this server can read: its framing is right, whatever its method, path, headers and body."""
    method = draw(st.sampled_from(METHODS))
    target = draw(st.sampled_from(PATHS) | st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E),
                                                    min_size=1, max_size=60).map(lambda t: "/" + t))
    extra = draw(st.lists(st.tuples(st.text(TOKEN_CHARS, min_size=1, max_size=20).filter(lambda n: n.lower() not in FRAMING_NAMES),
                                    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
                                            max_size=60).map(str.strip)), max_size=6))
    if draw(st.booleans()):  # a huge value, still within a line's limit, padded with optional whitespace
        extra.append(("X-Huge", " \t" * draw(st.integers(0, 3)) + "v" * draw(st.integers(0, MAX_LINE_BYTES // 2))))
    if draw(st.booleans()):
        extra.append(("Connection", draw(st.sampled_from(["close", "keep-alive", "Keep-Alive, Upgrade", "te"]))))
    body = draw(bodies())
    chunked = draw(st.booleans())
    return {"method": method, "target": target, "version": draw(st.sampled_from(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0"])),
            "headers": [("Host", "127.0.0.1"), *extra], "body": body, "chunked": chunked,
            "cuts": draw(st.lists(st.integers(0, max(len(body), 1)), max_size=3))}


def encode(req: dict) -> tuple[bytes, bytes]:
    """(head, body) as the wire carries them: chunked in the drawn pieces, or with a Content-Length."""
    headers = list(req["headers"])
    body = req["body"]
    if req["chunked"] and req["version"] == "HTTP/1.1":
        cuts = sorted({0, len(body), *(c for c in req["cuts"] if c <= len(body))})
        pieces = [body[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        headers.append(("Transfer-Encoding", "chunked"))
    else:
        wire = body
        headers.append(("Content-Length", str(len(body))))
    head = f"{req['method']} {req['target']} {req['version']}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode("latin-1") + b"\r\n", wire


# Each takes (head, body) of a valid request and returns bytes this server cannot read as HTTP/1.1.
def _replace_line(head: bytes, index: int, line: bytes) -> bytes:
    lines = head.split(b"\r\n")
    lines[index] = line
    return b"\r\n".join(lines)


def _header(head: bytes, line: bytes) -> bytes:
    return head[:-2] + line + b"\r\n\r\n"


def _unframed(head: bytes) -> bytes:
    """The head without its Content-Length and Transfer-Encoding lines."""
    lines = [l for l in head.split(b"\r\n") if not l.lower().startswith((b"content-length:", b"transfer-encoding:"))]
    return b"\r\n".join(lines)


def _set_length(head: bytes, value: bytes) -> bytes:
    return _header(_unframed(head), b"Content-Length: " + value)


def _chunked(head: bytes) -> bytes:
    return _header(_unframed(head), b"Transfer-Encoding: chunked")


BREAKERS = {
    "content-length-not-digits": lambda d, h, b: (_set_length(h, d(st.sampled_from(
        [b"-1", b"+5", b"5.0", b"0x10", b"abc", b"", b"1 2", b"\xb2"]))), b),
    "content-length-too-large": lambda d, h, b: (_set_length(h, str(d(st.integers(MAX_BODY_BYTES + 1, 10**40))).encode()), b),
    "content-length-past-the-body": lambda d, h, b: (_set_length(h, str(len(b) + d(st.integers(1, 1000))).encode()), b),
    "conflicting-lengths": lambda d, h, b: (_header(_set_length(h, str(len(b)).encode()), b"Content-Length: %d" % (len(b) + 1)), b),
    "unknown-transfer-coding": lambda d, h, b: (_header(_unframed(h), b"Transfer-Encoding: " + d(st.sampled_from(
        [b"gzip", b"gzip, chunked", b"chunked, chunked", b"identity", b""]))), b"0\r\n\r\n"),
    "chunked-and-length": lambda d, h, b: (_header(_chunked(h), b"Content-Length: 5"), b"0\r\n\r\n"),
    "bad-chunk-size": lambda d, h, b: (_chunked(h), d(st.sampled_from(
        [b"g", b"-1", b"0x2", b"", b"12345678901234567", b"2 2"])) + b"\r\nxx\r\n0\r\n\r\n"),
    "chunk-size-wrong": lambda d, h, b: (_chunked(h), d(st.sampled_from([b"1", b"3"])) + b"\r\nxx\r\n0\r\n\r\n"),
    "chunked-never-ends": lambda d, h, b: (_chunked(h), d(st.sampled_from([b"2\r\nxx\r\n", b"2\r\nx", b"", b"0\r\n"]))),
    "bad-method": lambda d, h, b: (_replace_line(h, 0, d(st.sampled_from([b"P(ST", b"GE\x00T", b"G\xe9T", b"[]"])) + b" / HTTP/1.1"), b),
    "bad-version": lambda d, h, b: (_replace_line(h, 0, b"POST / " + d(st.sampled_from(
        [b"HTTP/2.0", b"HTTP/0.9", b"HTTP/1", b"HTTPS/1.1", b"http/1.1", b"HTTP/1.10", b"HTTP/3.0"]))), b),
    "http-0.9": lambda d, h, b: (_replace_line(h, 0, b"GET /"), b),
    "extra-space": lambda d, h, b: (_replace_line(h, 0, h.split(b"\r\n")[0].replace(b" ", b"  ", 1)), b),
    "control-in-target": lambda d, h, b: (_replace_line(h, 0, b"POST /v1/" + bytes([d(st.sampled_from([*range(0, 9), *range(11, 13), *range(14, 32), 127, 0xE9]))]) + b" HTTP/1.1"), b),
    "header-without-colon": lambda d, h, b: (_header(h, d(st.text(TOKEN_CHARS, min_size=1, max_size=20)).encode()), b),
    "space-before-colon": lambda d, h, b: (_header(h, b"X-Thing : v"), b),
    "folded-header": lambda d, h, b: (_header(h, b"X-Thing: a\r\n " + d(st.text(TOKEN_CHARS, max_size=10)).encode()), b),
    "control-in-value": lambda d, h, b: (_header(h, b"X-Thing: a" + bytes([d(st.sampled_from([*range(0, 9), *range(11, 32), 127]))]) + b"b"), b),
    "too-many-headers": lambda d, h, b: (h[:-2] + b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADERS + 1)) + b"\r\n", b),
    "long-header-line": lambda d, h, b: (_header(h, b"X-Long: " + b"v" * MAX_LINE_BYTES), b),
    "long-request-line": lambda d, h, b: (_replace_line(h, 0, b"GET /" + b"a" * MAX_LINE_BYTES + b" HTTP/1.1"), b),
    "head-cut-off": lambda d, h, b: (h[:d(st.integers(1, len(h) - 1))], b""),
    "expectation": lambda d, h, b: (_header(h, b"Expect: " + d(st.sampled_from([b"200-ok", b"100-continue, x"]))), b),
}


@given(req=valid_requests(), breaker=st.none() | st.sampled_from(sorted(BREAKERS)), data=st.data())
def test_any_request_gets_a_well_formed_answer_and_a_journal_line(served, capfd, req, breaker, data):
    head, body = encode(req)
    if breaker is not None:
        head, body = BREAKERS[breaker](data.draw, head, body)
    before = len(served.api.journal.exchanges())
    received = exchange_raw(served.port, head + body)
    responses = parse_responses(received, head_request=req["method"] == "HEAD")
    assert len(responses) == 1, received[:500]
    (response,) = responses
    assert response.status < 500, (response, served.api.internal_errors)
    if response.headers.get("content-type") == "application/json" and response.body:
        answer = json.loads(response.body)  # a JSON answer, in the provider's shape when it refuses
        assert response.status < 400 or isinstance(answer["error"], dict), answer
    if breaker is not None:  # unreadable framing: a 4xx, and the server closes the connection (nothing after is read)
        assert 400 <= response.status < 500, (breaker, response)
        assert response.closed_after and response.headers.get("connection") == "close", (breaker, response)
    exchanges = served.api.journal.exchanges()[before:]
    assert [e.status for e in exchanges] == [response.status], (breaker, exchanges)
    if breaker is not None:
        assert exchanges[0].klass == "malformed" and exchanges[0].error, exchanges[0]
    lines = served.new_journal_lines()  # valid JSONL after every example
    assert [line["seq"] for line in lines] == [e.seq for e in served.api.journal.exchanges()[-len(lines):]]
    assert served.checked_bytes == served.path.stat().st_size and lines[-1]["seq"] == exchanges[0].seq
    assert served.api.internal_errors == [] and served.thread_failures == []
    assert capfd.readouterr().err == ""  # nothing printed by any thread of the server
