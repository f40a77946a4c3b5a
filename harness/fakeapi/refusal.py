"""Refusals in the provider's error shape, whichever wire format the request's path speaks.

A request the fake API will not serve (unreadable, from a process that is not
the step's) is answered in the shape its client parses: an SDK that gets the
error it expects reports it as an API error, rather than failing to parse one.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from urllib.parse import urlsplit

from harness.fakeapi import formats
from harness.fakeapi.formats.base import BadRequest, WireFormat
from harness.fakeapi.transport import HTTPRequest, HTTPResponse


def request_id(seq: int) -> str:
    return f"req_harness{seq:012d}"


def path_and_query(target: str, strict: bool = True) -> tuple[str, str]:
    """The path (an absolute URL's with its scheme and host) and query of a request target.

    strict: a target no URL parser can read is a BadRequest; otherwise it is kept whole as the path.
    """
    try:
        parts = urlsplit(target)
    except ValueError as exc:  # e.g. "http://[::1": an unclosed IPv6 literal
        if strict:
            raise BadRequest(f"unreadable request target {target[:200]!r}: {exc}") from None
        return target, ""
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}{parts.path}", parts.query
    return parts.path, parts.query


def format_of(path: str) -> WireFormat:
    """The wire format whose error shape a refusal on `path` (from path_and_query, not strict) takes."""
    if path.startswith(("http://", "https://")):
        try:
            path = urlsplit(path).path
        except ValueError:
            return formats.DEFAULT
    return formats.owning(path.rstrip("/"))


def response(seq: int, exc: BadRequest, wire_format: WireFormat) -> HTTPResponse:
    """The refusal of exchange `seq`, in the error shape of the format it was refused in."""
    rid = request_id(seq)
    body = wire_format.refusal_body(exc, rid)
    return HTTPResponse(exc.status, [("content-type", "application/json"), ("request-id", rid)], body=body)


def internal_error(request: HTTPRequest, exc: BaseException) -> tuple[str, HTTPResponse]:
    """A failure of the fake API's own: one line saying where (for the run to report), and the 500 answering it."""
    line = failure_line(f"the fake API failed on {request.method} {request.target[:200]!r}", exc)
    return line, HTTPResponse(500, [("content-type", "application/json"), ("connection", "close")],
                              body=formats.DEFAULT.error_body(line, "api_error", ""))


def failure_line(what: str, exc: BaseException) -> str:
    """`what`, the exception and the line of code it came from, on one line: a traceback's gist, never its bulk."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{what}: {type(exc).__name__}: {exc}{where}"
