"""temporary_text_transient: temporary text stays after the durable prefix, out of the history, within its step.

Synthetic journals pin the rules byte by byte, in the Anthropic shape (cache
breakpoints) and the OpenAI shape (none); the fake API's own OpenAI routes and
the real reference agent, run step by step in fresh processes, show the check
failing on a broken agent and passing on a correct one.
"""

from __future__ import annotations

import http.client
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from builders import (
    assistant,
    compaction,
    context,
    conversation,
    exchange,
    system,
    user,
)
from vocabulary import say, step_with

from harness.checks import CHECK_NAMES, CheckContext, run_check, temporary
from harness.journal.requests import read_journal
from harness.reference_agent import defects as d
from harness.reference_agent.cli import parse_args
from harness.reference_agent.prompt import (
    HEADLESS_TEXT,
    ProcessContext,
    start_session,
    system_blocks,
    user_prompt,
)
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
HEADLESS = HEADLESS_TEXT
NOTE = "For this turn only: show the working."
IDENTITY = "You are Agent X."
BODY = "Body.\n\nAPPENDED RULES"


def judged(*exchanges, texts=(), per_step=None) -> CheckContext:
    return replace(context(*exchanges), temporary=tuple(texts), step_temporary=dict(per_step or {}))


def verdict(ctx: CheckContext):
    return temporary.check(ctx)


def anthropic(step_body: dict[int, str] | None = None, tail: dict[int, list[str]] | None = None, turns: int = 3):
    """Identity, cached body, then per-process blocks after the breakpoint, as the reference agent sends them."""
    def system_for(step):
        blocks = [IDENTITY, (step_body or {}).get(step, BODY), *(tail or {}).get(step, [HEADLESS])]
        return system(*blocks, breakpoint_at=1)

    return conversation([(f"q{i}", f"a{i}") for i in range(1, turns + 1)], system_for)


def openai(step_system: dict[int, list[str]], turns: int = 3):
    """No cache_control anywhere: the whole system text is the prefix."""
    return conversation([(f"q{i}", f"a{i}") for i in range(1, turns + 1)],
                        lambda step: system(*step_system.get(step, [IDENTITY, BODY, HEADLESS]), breakpoint_at=None))


# ----------------------------------------------------------------- the durable prefix


def test_text_after_the_breakpoint_in_every_step_passes_with_evidence_per_step():
    result = verdict(judged(*anthropic(), texts=[HEADLESS]))
    assert result.verdict == "pass", result.message
    assert "1: after the prefix · 2: after the prefix · 3: after the prefix" in result.message
    assert [row["texts"][0]["found"] for row in result.evidence["by_step"]] == [["after the prefix"]] * 3


def test_text_frozen_into_the_cached_body_fails_with_step_block_offset_and_context():
    frozen = "Body.\n" + HEADLESS + "\n\nAPPENDED RULES"
    result = verdict(judged(*anthropic({2: frozen, 3: frozen}), texts=[HEADLESS]))
    assert result.verdict == "fail"
    assert (result.step, result.request, result.observed) == (2, 2, "prefix")
    offset = len((IDENTITY + "\n\nBody.\n").encode())
    assert result.message.startswith(
        f"temporary text frozen into the prefix at step 2 (resume), request #2: system block 1, offset {offset} of the durable prefix")
    assert "⟦This is an unattended, non-interactive run" in result.message and "⟧\\n\\nAPPENDED RULES" in result.message
    assert "also: temporary text frozen into the prefix at step 3" in result.message
    assert "1: after the prefix · 2: prefix, after the prefix · 3: prefix, after the prefix" in result.message
    assert [(p["step"], p["block"], p["offset"]) for p in result.evidence["problems"]] == [(2, 1, offset), (3, 1, offset)]


def test_the_seeds_opposite_order_body_text_identity_fails_without_breakpoints():
    """What was frozen: body + headless + identity, persisted and adopted by the next process."""
    reordered = {2: ["Body.", HEADLESS, IDENTITY], 3: ["Body.", HEADLESS, IDENTITY]}
    result = verdict(judged(*openai(reordered), texts=[HEADLESS]))
    assert result.verdict == "fail" and result.step == 2
    assert result.evidence["problems"][0]["offset"] == len("Body.\n\n")
    assert "system block 1" in result.message


def test_text_ending_the_system_prompt_without_breakpoints_is_outside_the_prefix():
    result = verdict(judged(*openai({}), texts=[HEADLESS]))
    assert result.verdict == "pass", result.message
    # Two temporary texts and whitespace at the end: both can be dropped without moving a byte before them.
    tails = {s: [IDENTITY, BODY, HEADLESS + "\n", NOTE + "  \n"] for s in (1, 2, 3)}
    assert verdict(judged(*openai(tails), texts=[HEADLESS, NOTE])).verdict == "pass"


def test_text_ending_the_cached_blocks_is_frozen_there():
    """Before a breakpoint is cached: ending the cached part does not make the text this process's own."""
    at_end = {s: BODY + "\n\n" + HEADLESS for s in (1, 2, 3)}
    result = verdict(judged(*anthropic(at_end, tail={s: [] for s in (1, 2, 3)}), texts=[HEADLESS]))
    assert result.verdict == "fail" and result.step == 1, result.message


def test_without_breakpoints_text_ending_the_system_text_passes_but_not_when_durable_text_follows():
    assert verdict(judged(*openai({}), texts=[HEADLESS])).verdict == "pass"
    followed = {s: [IDENTITY, HEADLESS, BODY] for s in (1, 2, 3)}
    result = verdict(judged(*openai(followed), texts=[HEADLESS]))
    assert result.verdict == "fail" and result.step == 1, result.message


def test_durable_prefix_strips_only_temporary_texts_that_end_it_and_only_without_breakpoints():
    blocks = (IDENTITY, "Body.\n" + HEADLESS + "\nMore.\n\n" + HEADLESS + "\n")
    plain = exchange(1, 1, system(*blocks, breakpoint_at=None), [user("q")])
    assert temporary.durable_prefix(plain, [HEADLESS]) == IDENTITY + "\n\nBody.\n" + HEADLESS + "\nMore.\n\n"
    cached = exchange(1, 1, system(*blocks, breakpoint_at=1), [user("q")])
    assert temporary.durable_prefix(cached, [HEADLESS]) == IDENTITY + "\n\n" + blocks[1]


def test_metadata_blocks_are_outside_the_prefix():
    turns = anthropic(tail={s: [] for s in (1, 2, 3)})
    for turn in turns:
        turn.normalized["system"].insert(0, {"text": "billing: " + HEADLESS + " v1", "cache_control": None, "cache_key": False})
    result = verdict(judged(*turns, texts=[HEADLESS]))
    assert result.verdict == "pass", result.message


# ----------------------------------------------------------------- history and the step's own text


def test_text_in_a_user_message_is_persisted_into_the_history():
    turns = anthropic(tail={1: [], 2: [], 3: []})
    turns[1].normalized["messages"][-1] = user("q2\n\n" + NOTE)
    result = verdict(judged(*turns, per_step={2: NOTE}))
    assert result.verdict == "fail" and (result.step, result.observed) == (2, "history")
    assert result.message.startswith(
        "step 2's temporary text persisted into the history at step 2 (resume), request #2: message 2 (user), offset 4 of its text")


def test_step_text_in_a_later_step_outlived_it_in_the_instructions_or_the_history():
    late = anthropic(tail={1: [HEADLESS], 2: [HEADLESS, NOTE], 3: [HEADLESS, NOTE]})
    result = verdict(judged(*late, texts=[HEADLESS], per_step={2: NOTE}))
    assert result.verdict == "fail" and (result.step, result.expected, result.observed) == (3, "absent", "after the prefix")
    assert result.message.startswith(
        "step 2's temporary text outlived its step: found at step 3 (resume), request #3, after the prefix: offset")
    remembered = anthropic(tail={1: [], 2: [NOTE], 3: []})
    remembered[2].normalized["messages"].insert(1, assistant("noted: " + NOTE))
    result = verdict(judged(*remembered, per_step={2: NOTE}))
    assert result.verdict == "fail" and result.step == 3 and result.observed == "history"


def test_the_same_text_declared_again_at_a_later_step_is_judged_there_not_as_outliving():
    turns = anthropic(tail={1: [NOTE], 2: [], 3: [NOTE]})
    assert verdict(judged(*turns, per_step={1: NOTE, 3: NOTE})).verdict == "pass"


def test_tool_results_are_not_the_agents_history():
    turns = anthropic(tail={1: [], 2: [NOTE], 3: []})
    turns[2].normalized["messages"].insert(
        1, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": NOTE}]})
    assert verdict(judged(*turns, per_step={2: NOTE})).verdict == "pass"


# ----------------------------------------------------------------- absent: reported, and never a pass on nothing


def test_text_absent_from_some_steps_is_reported_not_failed():
    result = verdict(judged(*anthropic(tail={1: [HEADLESS], 2: [], 3: [HEADLESS]}), texts=[HEADLESS]))
    assert result.verdict == "pass"
    assert "note: the temporary text is absent from the requests of step(s) 2" in result.message
    assert "2: absent" in result.message


def test_step_text_absent_from_its_step_but_seen_elsewhere_fails_as_outliving():
    result = verdict(judged(*anthropic(tail={1: [], 2: [], 3: [NOTE]}), per_step={2: NOTE}))
    assert result.verdict == "fail" and "outlived its step" in result.message
    assert "note: step 2's temporary text is absent from that step's own requests" in result.message


def test_text_in_no_request_at_all_is_an_error_never_a_pass():
    result = verdict(judged(*anthropic(tail={1: [], 2: [], 3: []}), texts=[HEADLESS]))
    assert result.verdict == "error" and result.message.startswith("nothing to judge: temporary text 'This is an unattended")
    compacted = [*anthropic(), compaction(4, 4, [user("q1")], "the user asked three things")]  # step 4: a compaction only
    on_compact = verdict(judged(*compacted, texts=[HEADLESS], per_step={4: NOTE}))
    assert on_compact.verdict == "error" and "step 4's temporary text" in on_compact.message
    assert "step 4 sent no main request" in on_compact.message


def test_a_failure_outranks_a_text_with_nothing_to_judge():
    frozen = {s: HEADLESS + "\n" + BODY for s in (1, 2, 3)}
    assert verdict(judged(*anthropic(frozen), texts=[HEADLESS], per_step={2: NOTE})).verdict == "fail"


def test_nothing_declared_or_nothing_sent_is_an_error():
    assert verdict(judged(*anthropic())).verdict == "error"
    assert verdict(judged(texts=[HEADLESS])).verdict == "error"


def test_the_check_is_registered():
    assert temporary.NAME in CHECK_NAMES
    assert run_check(temporary.NAME, judged(*anthropic(), texts=[HEADLESS])).verdict == "pass"


# ----------------------------------------------------------------- the OpenAI wire formats, through the fake API


def _post(server, path: str, body: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"content-type": "application/json", "authorization": "Bearer sk-test"})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def _chat(server, system_texts: list[str], history: list[dict], prompt: str) -> list[dict]:
    messages = history + [{"role": "user", "content": prompt}]
    reply = _post(server, "/v1/chat/completions",
                  {"model": "gpt-test-1", "messages": [{"role": "system", "content": s} for s in system_texts] + messages})
    return messages + [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]}]


def _responses(server, system_texts: list[str], history: list[dict], prompt: str) -> list[dict]:
    items = history + [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]
    body = {"model": "gpt-test-1", "instructions": "\n\n".join(system_texts), "input": items}
    return items + _post(server, "/v1/responses", body)["output"]


@pytest.mark.parametrize("broken", [False, True], ids=["correct", "broken"])
@pytest.mark.parametrize("fmt", ["chat", "responses"])
def test_openai_formats_through_the_fake_api(served, fmt, broken):
    """A correct client ends its instructions with the temporary text; a broken one saves it before the rules."""
    api, server, journal_path = served
    send = _chat if fmt == "chat" else _responses
    history: list[dict] = []
    for step in (1, 2):
        api.begin_step(step_with(say(f"answer {step}"), index=step))
        rules = [IDENTITY, "Body.", HEADLESS, "APPENDED RULES"] if broken and step == 2 else [IDENTITY, BODY, HEADLESS]
        history = send(server, rules, history, f"question {step}")
        api.end_step()
    exchanges = read_journal(journal_path)
    assert [e.protocol for e in exchanges] == [f"openai-{fmt}"] * 2
    result = temporary.check(judged(*exchanges, texts=[HEADLESS]))
    assert result.verdict == ("fail" if broken else "pass"), result.message
    if broken:
        assert result.step == 2 and "frozen into the prefix" in result.message


# ----------------------------------------------------------------- the reference agent


def test_reference_agent_sends_step_text_after_the_breakpoint_and_never_saves_it():
    ctx = ProcessContext(temporary=NOTE)
    session = start_session(ctx)
    blocks = system_blocks(session, ctx)
    assert [b["text"] for b in blocks[2:]] == [HEADLESS_TEXT, NOTE] and "cache_control" in blocks[1]
    assert NOTE not in json.dumps(session) and user_prompt("q", ctx) == "q"
    hooked = ProcessContext(temporary=NOTE, defects=frozenset({d.TEMPORARY_TEXT_IN_HISTORY}))
    assert user_prompt("q", hooked) == "q\n\n" + NOTE
    assert user_prompt("q", replace(hooked, temporary=None)) == "q"


def test_reference_target_passes_the_placeholder_and_an_empty_one_means_none():
    (target,) = resolve_target("reference")
    assert all("--temporary={temporary}" in target.commands[k] for k in ("launch", "resume"))
    assert parse_args(["-p", "x", "--temporary="]).temporary == ""
    assert parse_args(["-p", "x", "--temporary=-leading dash"]).temporary == "-leading dash"


def test_the_scenarios_declare_what_the_reference_agent_sends():
    headless = load_scenario(SCENARIOS / "temporary-headless-text.yaml")
    assert headless.temporary == (HEADLESS_TEXT,) and HEADLESS_TEXT == HEADLESS
    one_step = load_scenario(SCENARIOS / "temporary-text-for-one-step.yaml")
    assert set(one_step.step_temporary) <= {1, 2} and one_step.step_temporary
    for sc in (headless, one_step):
        assert temporary.NAME in sc.checks


def _run(sc, target_spec: str, tmp_path: Path, keep: bool = False):
    (target,) = resolve_target(target_spec)
    journal = tmp_path / f"{target.name.replace(':', '_')}.jsonl"
    result = run_scenario(sc, target, journal, keep_workspace=keep)
    return result, read_journal(journal)


@pytest.mark.parametrize("scenario_file, broken", [
    ("temporary-headless-text.yaml", "reference:temporary-text-frozen-into-prefix"),
    ("temporary-text-for-one-step.yaml", "reference:temporary-text-in-history"),
])
def test_e2e_the_check_fails_on_the_broken_agent_and_passes_on_the_clean_one(tmp_path, scenario_file, broken):
    sc = load_scenario(SCENARIOS / scenario_file)
    clean, _ = _run(sc, "reference", tmp_path)
    assert clean.status == "pass", [c.message for c in clean.checks if c.verdict != "pass"]
    bad, _ = _run(sc, broken, tmp_path)
    assert bad.error is None and bad.as_expected
    check = next(c for c in bad.checks if c.check == temporary.NAME)
    assert check.verdict == "fail" and check.step == 2, check.message


def test_e2e_step_text_reaches_only_its_own_process_and_no_saved_session(tmp_path):
    sc = load_scenario(SCENARIOS / "temporary-text-for-one-step.yaml")
    (step,) = sc.step_temporary
    text = sc.step_temporary[step]
    result, exchanges = _run(sc, "reference", tmp_path, keep=True)
    try:
        assert result.status == "pass"
        carried = {e.step: [b["text"] for b in e.normalized["system"]] for e in exchanges}
        assert carried[step][-1] == text and carried[step][-2] == HEADLESS_TEXT
        assert all(text not in json.dumps(e.normalized) for e in exchanges if e.step != step)
        assert f"--temporary={text}" in result.steps[step - 1].argv
        # The other steps get the empty placeholder, which the agent ignores.
        assert all("--temporary=" in s.argv for s in result.steps if s.index != step)
        sessions = list(Path(result.workspace).glob("home/.reference-agent/sessions/*.json"))
        assert sessions and all(text not in p.read_text() for p in sessions)
    finally:
        shutil.rmtree(result.workspace, ignore_errors=True)


def test_judged_as_of_an_earlier_step_a_later_steps_text_is_not_missing():
    """`harness diff` judges the journal as it stood after each step; step 2's text is not owed at step 1."""
    first_step = anthropic(tail={1: []}, turns=1)
    result = verdict(judged(*first_step, per_step={2: NOTE}))
    assert result.verdict == "pass" and "step 2's temporary text comes later" in result.message
    both = verdict(judged(*anthropic(turns=1), texts=[HEADLESS], per_step={2: NOTE}))
    assert both.verdict == "pass" and "step 2" not in both.message


def test_e2e_harness_diff_judges_the_one_step_text_at_every_step(tmp_path):
    from harness.run.differential import compare

    sc = load_scenario(SCENARIOS / "temporary-text-for-one-step.yaml")
    (clean,), (broken,) = resolve_target("reference"), resolve_target("reference:temporary-text-in-history")
    comparison = compare([sc], clean, broken, tmp_path)
    cells = {(c.step, c.check): c.change for d in comparison.scenarios for c in d.cells}
    assert cells[(1, temporary.NAME)] == "unchanged-pass"
    assert cells[(2, temporary.NAME)] == cells[(3, temporary.NAME)] == "regression"
    assert all(change in ("unchanged-pass", "regression") for change in cells.values())
