"""Reading one HTTP/1.1 request off a connection: strictly, within bounds, and saying what was wrong.

Any local process can reach the fake API, and what it cannot read it must
still answer with a 4xx and journal as `malformed`, never crash on or lose.
http.server's own reader let framing through that it could not make sense of:
a Content-Length of 99999999999999999999 raised in the server's thread (the
request never reached the journal), a header line without a colon silently
swallowed the headers after it, headers cut off by the client's close were
taken as complete, an HTTP/0.9 request line was answered without a status
line, and a declared body length was allocated whole before a byte of it
arrived. Here every way a request can be unreadable is a `Malformed` with its
status and one line saying what was wrong, and nothing a request declares
makes the server hold more than it has received, or more than MAX_BODY_BYTES.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import BinaryIO, Callable

MAX_LINE_BYTES = 65536  # one request line or header line (http.server's and http.client's limit)
MAX_HEADERS = 100  # header lines in a request, and trailer lines after a chunked body (http.client's limit)
MAX_HEAD_BYTES = 1 << 20  # the request line and headers together
MAX_BODY_BYTES = 64 << 20  # above every provider's own request limit (Anthropic's Messages API: 32 MB)
READ_PIECE = 1 << 20  # a body is read in pieces this large: what is held grows only with what arrived

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(rb"HTTP/([0-9])\.([0-9])")
_TARGET_OK = re.compile(rb"[\x21-\x7e]+")  # visible ASCII: clients percent-encode everything else
_FORBIDDEN_IN_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control characters but HTAB
_DIGITS = re.compile(r"[0-9]+")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_SHOWN = 120  # characters of an offending value quoted in a reason


class Closed(Exception):
    """The client closed (or fell silent) before the first byte of a request: nothing to answer or journal."""


class Malformed(Exception):
    """A request that cannot be read as HTTP/1.1: its status (4xx), what was wrong, and what was read of it."""

    def __init__(self, status: int, reason: str, head: "RequestHead | None" = None, body: bytes = b"",
                 line: str = ""):
        super().__init__(reason)
        self.status, self.reason, self.head, self.body = status, reason, head, body
        self.line = line  # the request line as far as it was read, when no head could be made of it

    @property
    def method(self) -> str:
        return self.head.method if self.head else ""

    @property
    def target(self) -> str:
        return self.head.target if self.head else ""

    @property
    def headers(self) -> list[tuple[str, str]]:
        return self.head.headers if self.head else []


@dataclass
class RequestHead:
    method: str
    target: str
    version: tuple[int, int]
    headers: list[tuple[str, str]] = field(default_factory=list)

    def values(self, name: str) -> list[str]:
        """Every value of header `name`, comma-separated lists split (RFC 9110 5.3)."""
        name = name.lower()
        return [item.strip() for key, value in self.headers if key.lower() == name for item in value.split(",")]

    @property
    def keep_alive(self) -> bool:
        tokens = {token.lower() for token in self.values("connection")}
        return "keep-alive" in tokens if self.version < (1, 1) else "close" not in tokens

    @property
    def version_text(self) -> str:
        return f"HTTP/{self.version[0]}.{self.version[1]}"


def read_head(rfile: BinaryIO) -> RequestHead:
    """The request line and headers; Closed before any byte of a request, Malformed for anything unreadable."""
    line = _request_line(rfile)
    head = _parse_request_line(line)
    size = len(line)
    while True:
        raw = _read_line(rfile, head, "the headers", 431)
        size += len(raw)
        if raw in (b"\r\n", b"\n"):
            return head
        if size > MAX_HEAD_BYTES:
            raise Malformed(431, f"the request line and headers are larger than {MAX_HEAD_BYTES} bytes", head)
        if len(head.headers) >= MAX_HEADERS:
            raise Malformed(431, f"more than {MAX_HEADERS} header lines", head)
        head.headers.append(_parse_header(raw, head))


def read_body(rfile: BinaryIO, head: RequestHead, send_continue: Callable[[], None]) -> bytes:
    """The body as its framing says, once `send_continue` has been called if the client waits for it."""
    length = _declared_length(head)
    expect = {token.lower() for token in head.values("expect")}
    if expect - {"100-continue"}:
        raise Malformed(417, f"Expect {', '.join(sorted(expect))!r} cannot be met: only 100-continue is", head)
    if expect and head.version >= (1, 1) and length != 0:
        send_continue()
    if length is None:
        return _read_chunked(rfile, head)
    return _read_exactly(rfile, length, head, bytearray(), f"its {length}")


# ------------------------------------------------------------------ the head


def _request_line(rfile: BinaryIO) -> bytes:
    """The first line that is not blank (RFC 9112 2.2: a server skips blank lines before a request)."""
    for _ in range(MAX_HEADERS):
        try:
            line = rfile.readline(MAX_LINE_BYTES + 1)
        except (TimeoutError, OSError):  # an idle keep-alive connection timing out, or the client gone
            raise Closed() from None
        if not line:
            raise Closed()
        if line not in (b"\r\n", b"\n"):
            break
    else:
        raise Malformed(400, f"{MAX_HEADERS} blank lines and no request line")
    shown = line[:_SHOWN].decode("latin-1")
    if len(line) > MAX_LINE_BYTES:
        raise Malformed(414, f"the request line is longer than {MAX_LINE_BYTES} bytes", line=shown)
    if not line.endswith(b"\n"):
        raise Malformed(400, f"the connection closed inside the request line {shown!r}", line=shown)
    return line


def _parse_request_line(line: bytes) -> RequestHead:
    text = line.rstrip(b"\r\n")
    shown = text[:_SHOWN].decode("latin-1")
    parts = text.split(b" ")
    if len(parts) == 2 and all(parts):
        raise Malformed(400, f"an HTTP/0.9 request line {shown!r}: HTTP/1.0 and HTTP/1.1 only", line=shown)
    if len(parts) != 3 or not all(parts):
        raise Malformed(400, f"unreadable request line {shown!r}: expected METHOD TARGET HTTP/1.1", line=shown)
    method, target, version = parts
    if not _TOKEN.fullmatch(method):
        raise Malformed(400, f"the method {method[:_SHOWN].decode('latin-1')!r} is not an HTTP token", line=shown)
    matched = _VERSION.fullmatch(version)
    if not matched or matched[1] == b"0":
        raise Malformed(400, f"unknown protocol version {version[:_SHOWN].decode('latin-1')!r}", line=shown)
    if matched[1] != b"1":  # a 4xx, as for any request this server cannot read, rather than a 505
        raise Malformed(400, f"{version.decode('ascii')} is not served: HTTP/1.0 and HTTP/1.1 only", line=shown)
    head = RequestHead(method.decode("ascii"), target.decode("latin-1"), (1, int(matched[2])))
    if not _TARGET_OK.fullmatch(target):
        raise Malformed(400, "the request target holds a control character or a byte outside visible ASCII", head)
    if head.target.startswith("//"):  # as http.server: never taken for a scheme-relative URL
        head.target = "/" + head.target.lstrip("/")
    return head


def _read_line(rfile: BinaryIO, head: RequestHead, where: str, too_long: int, body: bytes = b"") -> bytes:
    try:
        line = rfile.readline(MAX_LINE_BYTES + 1)
    except TimeoutError:
        raise Malformed(408, f"the client fell silent inside {where}", head, body) from None
    except OSError as exc:
        raise Malformed(400, f"the connection failed inside {where}: {exc}", head, body) from None
    if len(line) > MAX_LINE_BYTES:
        raise Malformed(too_long, f"a line of {where} is longer than {MAX_LINE_BYTES} bytes", head, body)
    if not line.endswith(b"\n"):
        raise Malformed(400, f"the connection closed inside {where}", head, body)
    return line


def _parse_header(raw: bytes, head: RequestHead) -> tuple[str, str]:
    content = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
    shown = content[:_SHOWN].decode("latin-1")
    if content[:1] in (b" ", b"\t"):
        raise Malformed(400, f"header line {shown!r} starts with whitespace (obsolete line folding)", head)
    name, colon, value = content.partition(b":")
    if not colon or not _TOKEN.fullmatch(name):
        raise Malformed(400, f"header line {shown!r} is not NAME: VALUE", head)
    value = value.strip(b" \t")
    if _FORBIDDEN_IN_VALUE.search(value):
        raise Malformed(400, f"header {name.decode('ascii')!r} holds a control character", head)
    return name.decode("ascii"), value.decode("latin-1")


# ------------------------------------------------------------------ the body


def _declared_length(head: RequestHead) -> int | None:
    """The Content-Length, 0 without one, or None for a chunked body; Malformed when the framing is unreadable."""
    codings, lengths = head.values("transfer-encoding"), head.values("content-length")
    if codings:
        if lengths:
            raise Malformed(400, "both Transfer-Encoding and Content-Length: where the body ends is ambiguous", head)
        if [c.lower() for c in codings] != ["chunked"]:
            raise Malformed(400, f"Transfer-Encoding {', '.join(codings)[:_SHOWN]!r} is not served: chunked only", head)
        if head.version < (1, 1):
            raise Malformed(400, "Transfer-Encoding in an HTTP/1.0 request", head)
        return None
    if not lengths:
        return 0
    bad = next((value for value in lengths if not _DIGITS.fullmatch(value)), None)
    if bad is not None:
        raise Malformed(400, f"Content-Length {bad[:_SHOWN]!r} is not a number of bytes", head)
    digits = {value.lstrip("0") or "0" for value in lengths}
    if len(digits) > 1:
        raise Malformed(400, f"conflicting Content-Length values: {', '.join(sorted(digits))[:_SHOWN]}", head)
    (declared,) = digits
    if len(declared) > len(str(MAX_BODY_BYTES)) or int(declared) > MAX_BODY_BYTES:  # never int() of 4300+ digits
        shown = declared if len(declared) <= 40 else f"{declared[:20]}...({len(declared)} digits)"
        raise Malformed(413, f"the body declares {shown} bytes; the fake API reads at most {MAX_BODY_BYTES}", head)
    return int(declared)


def _read_exactly(rfile: BinaryIO, count: int, head: RequestHead, body: bytearray, of: str) -> bytes:
    """`count` more bytes onto `body`, in pieces; Malformed (with what arrived) if the connection ends first."""
    start = len(body)
    while len(body) - start < count:
        try:
            piece = rfile.read(min(READ_PIECE, count - (len(body) - start)))
        except TimeoutError:
            raise Malformed(408, f"the client fell silent after {len(body)} bytes of the body", head, bytes(body)) from None
        except OSError as exc:
            raise Malformed(400, f"the connection failed after {len(body)} bytes of the body: {exc}", head,
                            bytes(body)) from None
        if not piece:
            raise Malformed(400, f"the body ended after {len(body) - start} of {of} bytes: the client closed the "
                                 "connection", head, bytes(body))
        body += piece
    return bytes(body)


def _read_chunked(rfile: BinaryIO, head: RequestHead) -> bytes:
    body = bytearray()
    while True:
        line = _read_line(rfile, head, "a chunk size line", 400, bytes(body))
        matched = _CHUNK_SIZE.fullmatch(line.rstrip(b"\r\n"))
        if not matched:
            shown = line.rstrip(b"\r\n")[:_SHOWN].decode("latin-1")
            raise Malformed(400, f"bad chunk size line {shown!r} after {len(body)} bytes of the body", head, bytes(body))
        size = int(matched[1], 16)
        if len(body) + size > MAX_BODY_BYTES:
            raise Malformed(413, f"the chunked body grows past {MAX_BODY_BYTES} bytes, what the fake API reads at most",
                            head, bytes(body))
        if size == 0:
            break
        _read_exactly(rfile, size, head, body, f"a chunk's {size}")
        end = _read_line(rfile, head, "a chunk's end", 400, bytes(body))
        if end != b"\r\n":  # exactly: a bare LF here would hide a chunk one byte shorter than it said (its CR taken as data)
            raise Malformed(400, f"a chunk of {size} bytes is not followed by CRLF: its size line is wrong", head,
                            bytes(body))
    for _ in range(MAX_HEADERS + 1):  # trailer fields: read and dropped, as no model API uses them
        if _read_line(rfile, head, "the trailers", 431, bytes(body)) in (b"\r\n", b"\n"):
            return bytes(body)
    raise Malformed(431, f"more than {MAX_HEADERS} trailer lines", head, bytes(body))
