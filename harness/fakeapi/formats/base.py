"""The WireFormat protocol: what the fake API asks of a provider's wire format, by the same names for all of them.

The core (harness/fakeapi/core.py) routes, parses, answers and refuses
through these members only, so Anthropic's Messages API is served the way
the OpenAI and Gemini formats are and a new format is one module plus one
line in the registry (formats/__init__.py). Each format is a module whose
top-level names implement the protocol; tests/test_wire_formats.py holds
every registered one to it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Protocol, runtime_checkable

from harness.fakeapi.cache_sim import CacheFigures, PromptCache

# What one (method, path) is to the format that serves it (WireFormat.endpoint).
GENERATE = "generate"  # a model request: parsed, classified, journaled and answered from the script
COUNT_TOKENS = "count_tokens"  # a token count: a side call
MODEL_INFO = "model info"  # the model listing, or one model named by the path: a side call
WRONG_METHOD = "wrong method"  # one of the format's paths with a method it is not served by: refused 405
ENDPOINTS = (GENERATE, COUNT_TOKENS, MODEL_INFO, WRONG_METHOD)


class BadRequest(Exception):
    """A request the real API would refuse with a 4xx; carries the provider's error shape.

    Anthropic's refusals are this class; the other formats raise subclasses that carry what their error
    shape adds (OpenAI's names the offending parameter), so one `except BadRequest` catches them all.
    """

    def __init__(self, message: str, status: int = 400, error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class Reply(Protocol):
    """A reply built from a scripted turn, ready to render; what the journal keeps of it is the same shape for all."""

    @property
    def journal_view(self) -> dict[str, Any]:
        """Exchange.reply: the content as Anthropic-shaped blocks (what the history check compares), stop reason, usage."""
        ...


@runtime_checkable
class WireFormat(Protocol):
    """One provider's wire protocol, both directions."""

    NAME: str  # Exchange.protocol of what this format serves or refuses (harness/journal/exchange.py PROTOCOLS)
    REQUEST_ID_HEADER: str  # the header a served reply names its request id in
    # Whether scripted transport faults are carried out in this format; when they are, the format is also a
    # BreakableStream. Where not, the reply is given normally and the exchange notes the fault that was not.
    CARRIES_FAULTS: bool
    # POST of a token count: (the normalized view journaled, or None; the reply body); None: no such endpoint.
    count_tokens: Callable[[bytes], tuple[dict[str, Any] | None, bytes]] | None
    # GET of the model listing or of one model, by path: the reply body; None: no such endpoint.
    models_body: Callable[[str], bytes] | None

    def endpoint(self, method: str, path: str) -> str | None:
        """Which of ENDPOINTS this request is, if this format serves its path (trailing slash stripped)."""
        ...

    def owns_path(self, path: str) -> bool:
        """Whether a refusal of any request on `path` (trailing slash stripped) is answered in this format's shape."""
        ...

    def parse_request(self, body: bytes, path: str) -> dict[str, Any]:
        """The normalized view of a GENERATE request (harness/journal/conversation.py reads it); BadRequest if refused."""
        ...

    def cache_figures(self, cache: PromptCache, normalized: dict[str, Any]) -> CacheFigures:
        """What the provider's prompt cache reports for this request (harness/fakeapi/cache_sim.py)."""
        ...

    def build_reply(self, seq: int, normalized: dict[str, Any], blocks: list[dict[str, Any]], stop_reason: str,
                    usage: dict[str, int]) -> Reply:
        """The reply to exchange `seq` carrying the scripted blocks; ids derive from `seq`, so replays are identical."""
        ...

    def render_json(self, reply: Any) -> bytes:
        ...

    def render_sse(self, reply: Any) -> Iterator[bytes]:
        """The streamed reply, one server-sent event per chunk."""
        ...

    def error_body(self, message: str, error_type: str, request_id: str) -> bytes:
        """A scripted error (and the fake API's own refusals and failures) in this provider's error shape."""
        ...

    def refusal_body(self, exc: BadRequest, request_id: str) -> bytes:
        """The refusal of a request this format would refuse, in its error shape."""
        ...


@runtime_checkable
class BreakableStream(WireFormat, Protocol):
    """A format whose replies scripted faults break (harness/fakeapi/faults.py): its events have names."""

    def event_name(self, event: bytes) -> str:
        """The name of one rendered event, as the journal of a cut stream lists the events sent."""
        ...

    def render_sse_malformed(self, reply: Any) -> tuple[list[bytes], int]:
        """The whole event sequence with the data of one event cut in half; and that event's 0-based position."""
        ...
