"""Scripted API errors: a step or one turn answered with an HTTP error, and the agent's foreseen exit after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.journal.exchange import COMPACTION, MAIN
from harness.journal.requests import read_journal
from harness.results import ERROR, PASS
from harness.scenario.model import ApiError, TextBlock, Turn
from harness.targets import resolve_target
from vocabulary import AGENTS, HEAD, MODEL, assert_error, messages_body, parse, parse_error, post, reference, say, step_with


# ============================================================================ 1. scripted API errors: parsing


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error"),
     (503, "api_error")],
)
def test_step_error_defaults_its_type_from_the_status_and_gives_a_message(status, kind):
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: hi, reply: ok}", f"  - resume: {{prompt: x, error: {{status: {status}}}}}")
    step = sc.steps[1]
    assert step.error is not None
    assert (step.error.status, step.error.type) == (status, kind)
    assert isinstance(step.error.message, str) and step.error.message.strip()
    assert step.turns == () and step.scripts_an_error
    assert sc.steps[0].error is None and not sc.steps[0].scripts_an_error


def test_step_error_type_and_message_can_be_given():
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: hi}", "  - retry:", "      prompt: x",
               "      error: {status: 400, type: overloaded_error, message: 'harness: scripted failure'}")
    assert sc.steps[1].error == ApiError(400, "overloaded_error", "harness: scripted failure")


BAD_ERRORS = [
    # (name, lines after HEAD, line of the error counted in the whole file, fragments)
    ("status-200", ("steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x", "      error: {status: 200}"), 7,
     ["steps[2].resume.error.status: expected an HTTP error status (400-599), got an integer (200)"]),
    ("status-string", ("steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x", "      error:", "        status: '400'"), 8,
     ["steps[2].resume.error.status: expected an HTTP error status (400-599), got a string ('400')"]),
    ("status-bool", ("steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x", "      error: {status: true}"), 7,
     ["steps[2].resume.error.status: expected an HTTP error status (400-599), got a boolean (true)"]),
    ("status-600", ("steps:", "  - launch:", "      prompt: x", "      error: {status: 600}"), 6,
     ["steps[1].launch.error.status: expected an HTTP error status (400-599), got an integer (600)"]),
    ("status-399", ("steps:", "  - launch:", "      prompt: x", "      error: {status: 399}"), 6,
     ["steps[1].launch.error.status", "(400-599), got an integer (399)"]),
    ("status-missing", ("steps:", "  - launch:", "      prompt: x", "      error: {type: api_error}"), 6,
     ["steps[1].launch.error: missing required key 'status'"]),
    ("unknown-key-in-error", ("steps:", "  - launch:", "      prompt: x", "      error:", "        status: 500", "        kind: api_error"), 8,
     ["steps[1].launch.error: unknown key 'kind'", "allowed: message, status, type"]),
    ("error-not-mapping", ("steps:", "  - launch:", "      prompt: x", "      error: 500"), 6,
     ["steps[1].launch.error: expected a mapping with status, type, message, got an integer (500)"]),
    ("empty-type", ("steps:", "  - launch:", "      prompt: x", "      error: {status: 500, type: ''}"), 6,
     ["steps[1].launch.error.type: expected a non-empty string"]),
    ("reply-and-error", ("steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x", "      reply: ok",
                         "      error: {status: 500}"), 8,
     ["steps[2].resume: a step has 'reply'", "or 'error'", "not both", "'- error: {...}' in the reply list"]),
    ("turn-error-with-text", ("steps:", "  - launch:", "      prompt: x", "      reply:", "        - error: {status: 500}",
                              "          text: also this"), 8,
     ["steps[1].launch.reply[1]: 'error' cannot be combined with 'text'"]),
    ("turn-error-with-usage", ("steps:", "  - launch:", "      prompt: x", "      reply:", "        - ok",
                               "        - error: {status: 529}", "          usage: {input_tokens: 5}"), 9,
     ["steps[1].launch.reply[2]: 'error' cannot be combined with 'usage'"]),
    ("turn-error-bad-status", ("steps:", "  - launch:", "      prompt: x", "      reply:", "        - error: {status: 302}"), 7,
     ["steps[1].launch.reply[1].error.status: expected an HTTP error status (400-599), got an integer (302)"]),
]


@pytest.mark.parametrize(("lines", "line", "fragments"), [c[1:] for c in BAD_ERRORS], ids=[c[0] for c in BAD_ERRORS])
def test_bad_scripted_error_is_rejected_with_file_line_and_key_path(lines, line, fragments):
    assert_error(parse_error(*HEAD, *lines), line, *fragments)


def test_turn_error_in_a_reply_list_fails_only_that_turn():
    sc = parse(*HEAD, "steps:", "  - launch:", "      prompt: x", "      reply:",
               "        - error: {status: 529}", "        - '56'")
    step = sc.steps[0]
    assert step.error is None and step.scripts_an_error
    assert step.turns == (
        Turn(blocks=(), error=ApiError(529, "overloaded_error", step.turns[0].error.message)),
        Turn(blocks=(TextBlock("56"),)),
    )
    assert step.turns[0].error.message.strip()


# ============================================================================ 1. scripted API errors: the fake API


SUMMARIZER = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACT_PROMPT = "Your task is to create a detailed summary of the conversation so far.\n<summary>\n...\n</summary>"


def compaction_body() -> dict:
    return {
        "model": MODEL, "max_tokens": 64, "system": SUMMARIZER,
        "messages": [{"role": "user", "content": "What is 6*7?"}, {"role": "assistant", "content": "42"},
                     {"role": "user", "content": COMPACT_PROMPT}],
    }


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_every_main_request_of_an_error_step_gets_the_scripted_status_and_anthropic_error_body(served, stream):
    api, server, path = served
    error = ApiError(400, "invalid_request_error", "harness: scripted failure")
    api.begin_step(step_with(say("never given"), error=error))
    answers = [post(server, messages_body(f"try {i}", stream=stream)) for i in range(3)]
    api.end_step()
    for status, headers, body in answers:
        assert status == 400
        assert headers["content-type"].startswith("application/json")
        data = json.loads(body)
        assert data["type"] == "error"
        assert data["error"] == {"type": "invalid_request_error", "message": "harness: scripted failure"}
        assert "retry-after" not in headers
    for journal in (api.journal.exchanges(), read_journal(path)):
        assert [(e.klass, e.status, e.step) for e in journal] == [(MAIN, 400, 1)] * 3
        for e in journal:
            assert e.error and "400" in e.error and "harness: scripted failure" in e.error
            assert e.normalized is not None and e.stream is stream  # journaled as what it was


def test_a_turn_error_fails_only_its_own_request_and_the_next_gets_the_next_turn(served):
    api, server, _ = served
    api.begin_step(step_with(say("first"), Turn(blocks=(), error=ApiError(500, "api_error", "boom")), say("third")))
    answers = [post(server, messages_body(f"q{i}")) for i in range(3)]
    script = api.end_step()
    assert [status for status, _, _ in answers] == [200, 500, 200]
    assert json.loads(answers[0][2])["content"][0]["text"] == "first"
    assert json.loads(answers[1][2])["error"] == {"type": "api_error", "message": "boom"}
    assert json.loads(answers[2][2])["content"][0]["text"] == "third"
    assert [(e.klass, e.status, e.unforeseen) for e in api.journal.exchanges()] == [(MAIN, 200, False), (MAIN, 500, False),
                                                                                    (MAIN, 200, False)]
    assert script is not None and script.unused_turns == 0


@pytest.mark.parametrize(("status", "retry_after"), [(429, True), (529, True), (500, False), (503, False)])
def test_rate_limit_and_overload_errors_carry_retry_after(served, status, retry_after):
    api, server, _ = served
    api.begin_step(step_with(error=ApiError(status, "some_error", "m")))
    got, headers, _ = post(server, messages_body())
    api.end_step()
    assert got == status
    assert ("retry-after" in headers) is retry_after
    if retry_after:
        assert float(headers["retry-after"]) >= 0


def test_compaction_requests_in_an_error_step_still_get_their_summary(served):
    api, server, _ = served
    api.begin_step(step_with(error=ApiError(500, "api_error", "down"), summary="The user asked for 6*7."))
    compact_status, _, compact_body = post(server, compaction_body())
    main_status, _, _ = post(server, messages_body())
    api.end_step()
    assert compact_status == 200
    text = json.loads(compact_body)["content"][0]["text"]
    assert "<summary>\nThe user asked for 6*7.\n</summary>" in text
    assert main_status == 500
    assert [(e.klass, e.status) for e in api.journal.exchanges()] == [(COMPACTION, 200), (MAIN, 500)]


# ============================================================================ 1. scripted API errors: the runner

ERROR_THEN_RETRY = (
    *HEAD,
    "steps:",
    "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
    "  - resume:",
    "      prompt: 'And 7*8?'",
    "      error: {status: 400, message: 'harness: scripted failure of this turn'}",
    "  - retry: {prompt: 'And 7*8?', reply: '56'}",
)


def test_an_agent_failing_on_a_scripted_error_is_not_a_run_error_and_the_retry_is_judged(run):
    sc = parse(*ERROR_THEN_RETRY)
    result = run(sc, reference())
    assert result.error is None, result.error
    assert result.status == PASS and result.as_expected
    assert [c.verdict for c in result.checks] == [PASS] * 4
    launch, failed, retry = result.steps
    assert (launch.exit_code, retry.exit_code) == (0, 0)
    assert failed.exit_code not in (0, None) and failed.exit_code > 0
    assert failed.error is None
    assert any("scripted API error" in note for note in failed.notes), failed.notes
    assert "harness: scripted failure of this turn" in failed.stderr_tail  # the agent really saw the error body
    assert failed.classes == {MAIN: 1}
    journal = read_journal(Path(result.journal))
    assert [(e.step, e.klass, e.status) for e in journal] == [(1, MAIN, 200), (2, MAIN, 400), (3, MAIN, 200)]
    assert not any("scripted API error" in note for s in (launch, retry) for note in s.notes)


def test_the_same_failure_without_a_scripted_error_is_still_a_run_error(run):
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
               "  - resume: {prompt: 'And 7*8?', reply: '56'}", "  - retry: {prompt: 'And 7*8?', reply: '56'}")
    result = run(sc, resolve_target(str(AGENTS / "crash.yaml"))[0])
    assert result.status == ERROR
    assert result.error and result.error.startswith("step 2 (resume): the agent exited with code 3"), result.error
    assert [s.index for s in result.steps] == [1, 2]  # the retry never ran
    assert all(c.verdict == ERROR for c in result.checks)
    assert not any("scripted API error" in note for note in result.steps[1].notes)


def test_a_scripted_error_does_not_excuse_an_agent_that_never_sent_a_request(run):
    """crash.yaml's resume exits 3 before talking to the API: the scripted error never happened."""
    sc = parse(*ERROR_THEN_RETRY)
    result = run(sc, resolve_target(str(AGENTS / "crash.yaml"))[0])
    assert result.status == ERROR
    assert result.error and result.error.startswith("step 2 (resume): the agent exited with code 3; stderr ends with: "), result.error


def test_a_scripted_error_does_not_excuse_an_agent_killed_by_a_signal(run):
    sc = parse(*ERROR_THEN_RETRY)
    result = run(sc, resolve_target(str(AGENTS / "signal.yaml"))[0])
    assert result.status == ERROR
    assert result.error and result.error.startswith("step 2 (resume): the agent was killed by signal 9"), result.error


def test_a_scripted_error_never_sent_does_not_excuse_a_failure_of_the_agents_own(run):
    """The error is scripted for the step's second request; the agent makes one, gets its reply, and exits 1."""
    sc = parse(
        *HEAD,
        "steps:",
        "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
        "  - resume:",
        "      prompt: 'And 7*8?'",
        "      reply: ['56', {error: {status: 500}}]",
    )
    result = run(sc, resolve_target(str(AGENTS / "fail-after-reply.yaml"))[0])
    assert result.status == ERROR
    assert result.error and result.error.startswith("step 2 (resume): the agent exited with code 1"), result.error
    assert not any("scripted API error" in note for note in result.steps[1].notes)
