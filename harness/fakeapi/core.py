"""The fake model API as a transport-neutral function: request in, response out.

The HTTP server (and the in-process respx router) only adapt bytes on a
socket to HTTPRequest/HTTPResponse; everything a run depends on (whether the
running step sent it, routing, the script, classification, journaling)
happens here, once. `handle` never raises: what it cannot serve it refuses in
the provider's error shape, and a failure of its own is a 500 recorded in
`internal_errors`, not a traceback in a server thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit

from harness.journal.exchange import (
    COMPACTION, FOREIGN, MAIN, MALFORMED, OUTBOUND, SIDE, Exchange, redact_headers, redact_query, redact_text,
)
from harness.journal.requests import Journal
from harness.fakeapi import cache_sim, faults, formats, refusal, sender
from harness.journal import conversation
from harness.fakeapi.formats.base import COUNT_TOKENS, GENERATE, WRONG_METHOD, BadRequest, BreakableStream, Reply, WireFormat
from harness.fakeapi.script import DEFAULT_REPLY, MAX_REQUESTS_PER_STEP, SIDE_REPLY, StepScript, blocks_of, text_turn
from harness.fakeapi.transport import HTTPRequest, HTTPResponse
from harness.journal.rules import RequestRule
from harness.scenario.model import ApiError, Step, Turn

__all__ = ["CONTROL_PREFIX", "FakeModelAPI", "HTTPRequest", "HTTPResponse"]  # transports import these here

CONTROL_PREFIX = "/_harness/"  # the harness's own paths, never a model API's


@dataclass
class _ActiveStep:
    step: Step
    script: StepScript
    pid: int | None = None


class FakeModelAPI:
    def __init__(self, journal: Journal | None = None, side_calls: Iterable[RequestRule] = (),
                 compaction_calls: Iterable[RequestRule] = ()):
        self.journal = journal if journal is not None else Journal()
        self.side_calls = tuple(side_calls)
        self.compaction_calls = tuple(compaction_calls)  # a target's own summarization requests
        self.own_addresses: set[str] = set()  # host:port this API answers on (the server fills it in)
        self._lock = threading.Lock()
        self._seq = 0
        self._active: _ActiveStep | None = None
        self._started = time.monotonic()
        self._cache = cache_sim.PromptCache()  # what the provider would hold: one run, all its steps
        self._step_listeners = 0  # listeners adopted from step network namespaces, open now (FakeAPIServer.adopt_listener)
        # Set: serves the control path the recording shim reports launches on (harness/fakeapi/launch_control.py).
        self.control: Callable[[HTTPRequest, str], HTTPResponse] | None = None
        # One line per failure of the fake API's own (a bug, not the request's fault): answered 500, never a traceback.
        self.internal_errors: list[str] = []

    # ------------------------------------------------------------ step bookkeeping

    def begin_step(self, step: Step, max_requests: int = MAX_REQUESTS_PER_STEP) -> None:
        """`max_requests`: the loop cap (harness/fakeapi/script.py); only a measurement of many replies lifts it."""
        with self._lock:
            self._active = _ActiveStep(step, StepScript(step, max_requests))

    def set_step_pid(self, pid: int) -> None:
        """The step's root process, so the server can tell which process sent a request."""
        with self._lock:
            if self._active is not None:
                self._active.pid = pid

    @property
    def step_pid(self) -> int | None:
        active = self._active
        return active.pid if active else None

    def end_step(self) -> StepScript | None:
        with self._lock:
            active, self._active = self._active, None
        return active.script if active else None

    def step_listener_opened(self, opened: bool = True) -> None:
        """A step's network namespace is served (or, False, no longer): only its processes can reach that listener."""
        with self._lock:
            self._step_listeners += 1 if opened else -1

    # ------------------------------------------------------------ dispatch

    def handle(self, request: HTTPRequest) -> HTTPResponse:
        """The answer to one request; it is journaled first. Never raises: a fault of the fake API's own is a 500."""
        try:
            return self._foreign(request) or self._dispatch(request)
        except Exception as exc:  # noqa: BLE001 - the connection must get an answer, and the failure a record
            return self._internal_error(request, exc)

    def refuse_malformed(self, request: HTTPRequest, status: int, reason: str) -> HTTPResponse:
        """A request the transport could not read whole (its framing, a size limit): journaled `malformed`, a 4xx."""
        error_type = "request_too_large" if status == 413 else "invalid_request_error"
        try:
            path, query = refusal.path_and_query(request.target, strict=False)
            return self._foreign(request, also=reason) or self._refuse(
                request, query, path, BadRequest(reason, status, error_type), refusal.format_of(path))
        except Exception as exc:  # noqa: BLE001
            return self._internal_error(request, exc)

    def _foreign(self, request: HTTPRequest, also: str | None = None) -> HTTPResponse | None:
        """A refusal, journaled `foreign`, for a request the running step did not send (harness/fakeapi/sender.py)."""
        active = self._active
        if active is None:
            return None
        why = sender.foreign_reason(request, active.pid, self._step_listeners > 0)  # one read: no lock to queue on
        if why is None:
            return None
        path, query = refusal.path_and_query(request.target, strict=False)
        wire_format = refusal.format_of(path)
        with self._journaling():
            exchange = self._new_exchange(request, path, query, FOREIGN, 403, active)
            exchange.error = sender.FOREIGN_ERROR
            exchange.notes.insert(0, why)
            if also is not None:
                exchange.notes.append(f"also unreadable: {also}")
            exchange.protocol = wire_format.NAME
            self.journal.record(exchange)
        return refusal.response(exchange.seq, BadRequest(exchange.error, 403, "permission_error"), wire_format)

    def _internal_error(self, request: HTTPRequest, exc: Exception) -> HTTPResponse:
        line, response = refusal.internal_error(request, exc)
        self.record_internal_error(line)
        return response

    def record_internal_error(self, line: str) -> None:
        """A failure of the fake API's own (here, or in the transport serving it), kept for the run to report."""
        with self._lock:
            self.internal_errors.append(line)

    def _dispatch(self, request: HTTPRequest) -> HTTPResponse:
        try:
            refusal.path_and_query(request.target)
        except BadRequest as exc:
            path, query = refusal.path_and_query(request.target, strict=False)
            return self._refuse(request, query, path, exc, formats.DEFAULT)
        if request.target.startswith("http://") and urlsplit(request.target).netloc in self.own_addresses:
            # A client that sends even loopback through the proxy variables (code-puppy 0.0.827 ignores
            # NO_PROXY) reaches this API by name: nothing left the machine, so it is answered as sent directly.
            parts = urlsplit(request.target)
            request = replace(request, target=parts.path + (f"?{parts.query}" if parts.query else ""), via_proxy=True)
        elif request.method == "CONNECT" or request.target.startswith(("http://", "https://")):
            return self._outbound(request)
        parts = urlsplit(request.target)
        path = parts.path.rstrip("/") or "/"
        if self.control is not None and path.startswith(CONTROL_PREFIX):
            return self.control(request, path)
        if request.method == "HEAD":  # clients probe reachability (Claude Code: `HEAD /`, `HEAD /api/hello`)
            self._record_simple(request, path, parts.query, 200, None)
            return HTTPResponse(200, [("content-type", "application/json")], body=b"")
        served = formats.serving(request.method, path)
        if served is None:
            return self._refuse(request, parts.query, path, BadRequest(f"Not found: {path}", 404, "not_found_error"),
                                formats.DEFAULT)
        wire_format, endpoint = served
        if endpoint == WRONG_METHOD:
            refused = BadRequest(f"{request.method} {path} is not served by the fake API", 405, "invalid_request_error")
            return self._refuse(request, parts.query, path, refused, wire_format)
        if endpoint == GENERATE:
            return self._generate(request, path, parts.query, wire_format)
        if endpoint == COUNT_TOKENS:
            try:
                normalized, body = wire_format.count_tokens(request.body)
            except BadRequest as exc:
                return self._refuse(request, parts.query, path, exc, wire_format)
        else:  # MODEL_INFO
            normalized, body = None, wire_format.models_body(path)
        self._record_simple(request, path, parts.query, 200, normalized)
        return HTTPResponse(200, [("content-type", "application/json")], body=body)

    def _generate(self, request: HTTPRequest, path: str, query: str, wire_format: WireFormat) -> HTTPResponse:
        """A model request in any format: the same script, classification and journal."""
        try:
            normalized = wire_format.parse_request(request.body, path)
        except BadRequest as exc:
            return self._refuse(request, query, path, exc, wire_format)
        klass = self._classify(normalized)  # the rules alone decide: outside the lock
        cache = cache_sim.PreparedCache(self._cache, normalized)  # the prompt laid out: outside the lock too
        with self._journaling():
            active = self._active
            exchange = self._new_exchange(request, path, query, klass, 200, active)
            exchange.protocol = wire_format.NAME
            exchange.normalized = normalized
            exchange.stream = normalized["stream"]
            turn = self._choose_turn(exchange, normalized, active)
            if turn.error is not None:
                return self._scripted_error(exchange, turn.error, wire_format)
            blocks = blocks_of(turn)
            usage = cache_sim.resolve_usage(
                wire_format.cache_figures(cache, normalized), blocks, turn.usage, active.step.usage if active else None
            )
            reply = wire_format.build_reply(exchange.seq, normalized, blocks, turn.effective_stop_reason, usage)
            if turn.fault is not None and wire_format.CARRIES_FAULTS:
                return self._scripted_fault(exchange, turn, reply, wire_format)
            if turn.fault is not None:
                exchange.notes.append(
                    f"scripted fault not carried out ({turn.fault.describe()}): faults are Anthropic-only; answered normally"
                )
            exchange.reply = reply.journal_view
            self.journal.record(exchange)
        headers = [(wire_format.REQUEST_ID_HEADER, refusal.request_id(exchange.seq))]
        if normalized["stream"]:
            headers += [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
            return HTTPResponse(200, headers, chunks=wire_format.render_sse(reply))
        headers.append(("content-type", "application/json"))
        return HTTPResponse(200, headers, body=wire_format.render_json(reply))

    def _classify(self, normalized: dict[str, Any]) -> str:
        """A target's side-call rules come first: a title request about a compacted conversation is still a side call."""
        if any(rule.matches(normalized) for rule in self.side_calls):
            return SIDE
        if conversation.is_compaction(normalized) or any(rule.matches(normalized) for rule in self.compaction_calls):
            return COMPACTION
        return MAIN

    def _choose_turn(self, exchange: Exchange, normalized: dict[str, Any], active: _ActiveStep | None) -> Turn:
        """Scripted turn for a main request, summary for a compaction, default otherwise (flagged); an error past the step's cap."""
        over_cap = active.script.count_request() if active else None
        if over_cap is not None:
            exchange.notes.append("refused: the step's request cap was reached")
            return Turn(blocks=(), error=over_cap)
        if exchange.klass == COMPACTION:
            summary = (active.step.summary if active else None) or conversation.default_summary(normalized)
            if active is None:
                exchange.unforeseen = True
                exchange.notes.append("compaction request outside any step")
            return text_turn(conversation.compaction_reply_text(summary))
        if exchange.klass == SIDE:
            return text_turn(SIDE_REPLY)
        turn = active.script.take_turn() if active else None
        if turn is None:
            exchange.unforeseen = True
            exchange.notes.append(
                "request outside any step" if active is None else "no scripted reply left for this step: default reply given"
            )
            turn = text_turn(DEFAULT_REPLY)
        return turn

    def _scripted_error(self, exchange: Exchange, error: ApiError, wire_format: WireFormat) -> HTTPResponse:
        """Called with the lock held: the request is journaled as what it was, answered with the scripted error."""
        exchange.status = error.status
        exchange.error = f"scripted {error.status} {error.type}: {error.message}"
        exchange.reply = {"error": {"status": error.status, "type": error.type, "message": error.message}}
        retry_after = error.retry_after_header
        if retry_after is not None:  # journaled as the number of seconds the header said
            exchange.reply["error"]["retry_after"] = int(retry_after) if retry_after.isdigit() else float(retry_after)
        self.journal.record(exchange)
        rid = refusal.request_id(exchange.seq)
        body = wire_format.error_body(error.message, error.type, rid)
        headers = [("content-type", "application/json"), ("request-id", rid)]
        if retry_after is not None:
            headers.append(("retry-after", retry_after))
        return HTTPResponse(error.status, headers, body=body)

    def _scripted_fault(self, exchange: Exchange, turn: Turn, reply: Reply, wire_format: BreakableStream) -> HTTPResponse:
        """Called with the lock held: journaled as the main request it was, with the fault and what was sent."""
        faulted = faults.apply(turn.fault, reply, exchange.stream, wire_format)
        exchange.status = faulted.status
        exchange.error = f"scripted fault: {faulted.summary}"
        exchange.reply = faulted.journal
        self.journal.record(exchange)
        headers = [("request-id", refusal.request_id(exchange.seq)), *faulted.headers]
        return HTTPResponse(faulted.status, headers, body=faulted.body, chunks=faulted.chunks, wire=faulted.wire)

    def _outbound(self, request: HTTPRequest) -> HTTPResponse:
        """Traffic meant for another host (through the proxy variables): journaled, refused, never forwarded."""
        if request.method == "CONNECT":
            path, query = redact_text(request.target), ""
        else:  # an absolute URL: its query may carry credentials, redacted like any other, and so may its user:password@
            parts = urlsplit(request.target)
            path, query = redact_text(f"{parts.scheme}://{parts.netloc}{parts.path}"), parts.query
        with self._journaling():
            exchange = self._new_exchange(request, path, query, OUTBOUND, 403, self._active)
            exchange.error = f"outbound {request.method} to {exchange.destination} refused: nothing leaves the machine"
            self.journal.record(exchange)
        body = formats.DEFAULT.error_body(exchange.error, "permission_error", refusal.request_id(exchange.seq))
        return HTTPResponse(403, [("content-type", "application/json"), ("connection", "close")], body=body)

    # ------------------------------------------------------------ journaling

    @contextlib.contextmanager
    def _journaling(self) -> Iterator[None]:
        """The lock that hands out seq, for recording an exchange; then, the lock released, its line written to disk.

        Every exchange is on disk, in seq order, before its reply is sent (Journal.write_recorded), but no
        connection waits for another's disk write to take its own turn: the lock held across the write made
        16 concurrent clients slower than one (issue 23).
        """
        try:
            with self._lock:
                yield
        finally:
            self.journal.write_recorded()

    def _record_simple(self, request: HTTPRequest, path: str, query: str, status: int, normalized) -> None:
        with self._journaling():
            exchange = self._new_exchange(request, path, query, SIDE, status, self._active)
            exchange.normalized = normalized
            self.journal.record(exchange)

    def _refuse(self, request: HTTPRequest, query: str, path: str, exc: BadRequest, wire_format: WireFormat) -> HTTPResponse:
        with self._journaling():
            exchange = self._new_exchange(request, path, query, MALFORMED, exc.status, self._active)
            exchange.error = str(exc)
            exchange.protocol = wire_format.NAME
            self.journal.record(exchange)
        return refusal.response(exchange.seq, exc, wire_format)

    def _new_exchange(self, request, path, query, klass, status, active: _ActiveStep | None) -> Exchange:
        """Called with the lock held: sequence numbers follow arrival order."""
        self._seq += 1
        exchange = Exchange(
            seq=self._seq,
            method=request.method,
            path=path,
            query=redact_query(query),
            headers=redact_headers(request.headers),
            body=request.body,
            klass=klass,
            status=status,
            time_s=time.monotonic() - self._started,
            step=active.step.index if active else None,
            step_kind=active.step.kind if active else None,
            pid=request.peer_pid,
        )
        if request.via_proxy:
            exchange.notes.append("sent through the proxy variables to this API's own address")
        if active is not None and sender.sender_unknown(request):
            exchange.notes.append(sender.SENDER_NOT_FOUND)
        return exchange
