"""Shared by the tests of the scenario vocabulary: parsing helpers, a run fixture, the reference target."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.fakeapi.server import FakeAPIServer
from harness.scenario.model import ApiError, Scenario, Step, TextBlock, Turn
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from harness.targets.base import Target

AGENTS = Path(__file__).resolve().parent / "agents"
APPEND = "Task prompt: answer with one number."
FILE = "vocabulary.yaml"  # the path every parsed scenario carries into its errors
MODEL = "claude-sonnet-4-5"


# --------------------------------------------------------------------------- helpers


def parse(*lines: str) -> Scenario:
    return scenario_from_text("\n".join(lines) + "\n", FILE)


def parse_error(*lines: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse(*lines)
    return caught.value


def assert_error(error: InputError, line: int, *fragments: str) -> None:
    """The error names the file and the line (1-based position in the given lines) and says what is wrong."""
    message = str(error)
    assert (error.path, error.line) == (FILE, line), message
    assert message.startswith(f"{FILE}:{line}: "), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


HEAD = ("name: vocab", f'append: "{APPEND}"')  # lines 1-2 of every scenario below


def reference() -> Target:
    (target,) = resolve_target("reference")
    return target


def step_with(*turns: Turn, error: ApiError | None = None, summary: str | None = None, index: int = 1) -> Step:
    return Step(index=index, kind="launch" if index == 1 else "resume", prompt="p", turns=tuple(turns), error=error,
                summary=summary)


def say(text: str) -> Turn:
    return Turn(blocks=(TextBlock(text),))


def post(server: FakeAPIServer, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """POST /v1/messages with http.client: status, lower-cased headers, raw body."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", "/v1/messages", body=json.dumps(body).encode(),
                     headers={"content-type": "application/json", "x-api-key": "sk-ant-test"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def messages_body(text: str = "What is 6*7?", *, system: Any = None, stream: bool = False, model: str = MODEL) -> dict:
    body: dict[str, Any] = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    if system is not None:
        body["system"] = system
    if stream:
        body["stream"] = True
    return body


def as_foreground() -> None:
    """Popen preexec_fn: Ctrl-C works as at a terminal, even when the tests run as a background job.

    A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored across
    exec; a harness started that way would never see the SIGINT these tests send it.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
