"""The wire formats the fake API speaks: one module each, every one a WireFormat (base.py), in one registry.

The core asks the registry which format serves a request and which one's
error shape a refusal takes; it never names a format itself.
"""

from __future__ import annotations

from harness.fakeapi.formats import anthropic, gemini, openai_chat, openai_responses
from harness.fakeapi.formats.base import WRONG_METHOD, WireFormat

# In routing order: Anthropic's GET /v1/models is served before Gemini's model paths, whose pattern it matches.
FORMATS: tuple[WireFormat, ...] = (anthropic, openai_chat, openai_responses, gemini)
# The shape of a refusal on a path no format owns, of outbound traffic and of the fake API's own failures:
# the format the harness began with, which every client of the messages path parses.
DEFAULT: WireFormat = anthropic


def serving(method: str, path: str) -> tuple[WireFormat, str] | None:
    """The format that serves `method path` (trailing slash stripped) and the endpoint it is; None: no format does.

    A format that only knows the path (WRONG_METHOD) answers when no other format serves the request.
    """
    wrong_method = None
    for wire_format in FORMATS:
        endpoint = wire_format.endpoint(method, path)
        if endpoint == WRONG_METHOD:
            wrong_method = wrong_method or (wire_format, endpoint)
        elif endpoint is not None:
            return wire_format, endpoint
    return wrong_method


def owning(path: str) -> WireFormat:
    """The format whose error shape a refusal on `path` (a request path, trailing slash stripped) takes."""
    return next((wire_format for wire_format in FORMATS if wire_format.owns_path(path)), DEFAULT)
