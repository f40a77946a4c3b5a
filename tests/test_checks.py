"""Each check passes on a correct journal and fails, with evidence, on a broken one.

Journals here are synthetic (built like the fake API records them) so every
byte is known; the library test runs the same checks on real agents.
"""

from __future__ import annotations

from builders import (
    assistant, compaction, context, conversation, exchange, system, user,
)

from harness.checks import appended, history, identity, prefix, run_check
from harness.checks.prefix import system_prefix
from harness.checks.evidence import first_difference
from harness.journal.exchange import SIDE

# ----------------------------------------------------------------- identity_stable


def test_identity_passes_when_every_turn_has_the_first_identity():
    result = identity.check(context(*conversation([("a", "1"), ("b", "2"), ("c", "3")])))
    assert result.verdict == "pass"
    assert result.observed == "You are Agent X."


def test_identity_flip_is_reported_at_the_step_that_flipped():
    def system_for(step):
        line = "You are Claude Code, Anthropic's official CLI for Claude." if step < 3 else \
            "You are a Claude agent, built on Anthropic's Claude Agent SDK."
        return system("x-anthropic-billing-header: cc_version=1", line, "Body APPENDED RULES")

    result = identity.check(context(*conversation([("a", "1"), ("b", "2"), ("c", "3")], system_for)))
    assert result.verdict == "fail"
    assert (result.step, result.request) == (3, 3)
    assert result.expected == "You are Claude Code, Anthropic's official CLI for Claude."
    assert result.observed == "You are a Claude agent, built on Anthropic's Claude Agent SDK."
    assert "identity flipped at step 3" in result.message
    assert "2 distinct identities over 3 requests" in result.message


def test_identity_missing_in_a_later_turn_fails():
    def system_for(step):
        return system("You are Agent X." if step == 1 else "Agent X here.", "Body")

    result = identity.check(context(*conversation([("a", "1"), ("b", "2")], system_for)))
    assert result.verdict == "fail" and result.step == 2 and result.observed is None
    assert "(no identity line)" in result.message


def test_identity_missing_from_the_first_turn_fails():
    result = identity.check(context(*conversation([("a", "1")], lambda s: system("Agent without a line"))))
    assert result.verdict == "fail" and result.step == 1


def test_identity_ignores_compaction_and_side_requests():
    turns = conversation([("a", "1"), ("b", "2")])
    side = exchange(10, 2, system("You are a title generator."), [user("title?")], klass=SIDE)
    squash = compaction(11, 2, turns[0].normalized["messages"], "s")
    result = identity.check(context(turns[0], side, squash, turns[1]))
    assert result.verdict == "pass"


def test_identity_without_main_requests_is_an_error_not_a_pass():
    assert identity.check(context()).verdict == "error"


# ----------------------------------------------------------------- appended_exactly_once


def test_appended_once_in_every_turn_passes():
    result = appended.check(context(*conversation([("a", "1"), ("b", "2")])))
    assert result.verdict == "pass"


def test_appended_missing_on_resume_fails_at_that_step():
    def system_for(step):
        return system("You are Agent X.", "Body.\n\nAPPENDED RULES" if step == 1 else "Body.")

    result = appended.check(context(*conversation([("a", "1"), ("b", "2"), ("c", "3")], system_for)))
    assert result.verdict == "fail"
    assert (result.step, result.expected, result.observed) == (2, 1, 0)
    assert "occurrences by request: 1 → 0 → 0" in result.message


def test_appended_twice_fails():
    def system_for(step):
        return system("You are Agent X.", "APPENDED RULES" if step == 1 else "APPENDED RULES\nAPPENDED RULES")

    result = appended.check(context(*conversation([("a", "1"), ("b", "2")], system_for)))
    assert result.verdict == "fail" and result.observed == 2


def test_appended_in_a_system_role_message_counts_as_instructions():
    turns = conversation([("a", "1")], lambda s: system("You are Agent X.", "Body"))
    turns[0].normalized["messages"].insert(0, {"role": "system", "content": [{"type": "text", "text": "APPENDED RULES"}]})
    assert appended.check(context(*turns)).verdict == "pass"


def test_appended_only_in_the_user_turn_fails_and_says_where_it_went():
    turns = conversation([("APPENDED RULES then a question", "1")], lambda s: system("You are Agent X.", "Body"))
    result = appended.check(context(*turns))
    assert result.verdict == "fail" and result.observed == 0
    assert "appears 1 time(s) in the conversation messages instead" in result.message


def test_appended_without_appended_text_is_an_error():
    assert appended.check(context(*conversation([("a", "1")]), append=None)).verdict == "error"


# ----------------------------------------------------------------- prefix_stable


def test_prefix_ignores_blocks_after_the_last_breakpoint():
    def system_for(step):
        return system("You are Agent X.", "Body APPENDED RULES", f"temporary text {step}", breakpoint_at=1)

    result = prefix.check(context(*conversation([("a", "1"), ("b", "2")], system_for)))
    assert result.verdict == "pass"


def test_prefix_growth_reports_offset_context_and_length_series():
    # The third seed's numbers: the instructions moved 5571 -> 6129 -> 6175.
    stable = "You are Agent X.\n" + "r" * 5000
    sizes = {1: 5571, 2: 6129, 3: 6175}

    def system_for(step):
        grown = stable + "\nNotes:" + "n" * (sizes[step] - len(stable) - len("\nNotes:"))
        return system(grown)

    result = prefix.check(context(*conversation([("a", "1"), ("b", "2"), ("c", "3")], system_for)))
    assert result.verdict == "fail"
    assert result.step == 2
    assert "5571 → 6129 → 6175" in result.message
    assert result.evidence["offset"] == 5571  # step 1's prefix is a prefix of step 2's
    assert result.evidence["changed_steps"] == [2, 3]
    assert (result.expected, result.observed) == (5571, 6129)


def test_prefix_first_differing_byte_is_exact():
    def system_for(step):
        return system("You are Agent X (id 1a2b).", "Body") if step == 1 else system("You are Agent X (id 1a9b).", "Body")

    result = prefix.check(context(*conversation([("a", "1"), ("b", "2")], system_for)))
    assert result.verdict == "fail"
    assert result.evidence["offset"] == len("You are Agent X (id 1a")
    assert "⟦2⟧b" in result.evidence["expected_context"]
    assert "⟦9⟧b" in result.evidence["observed_context"]
    assert "block 0" in result.message


def test_prefix_change_in_tools_fails():
    turns = conversation([("a", "1"), ("b", "2")])
    turns[0].normalized["tools"] = [{"name": "calculator", "input_schema": {}}]
    turns[1].normalized["tools"] = [{"name": "calculator", "input_schema": {"type": "object"}}]
    result = prefix.check(context(*turns))
    assert result.verdict == "fail" and "tool definitions" in result.message


def test_prefix_breakpoint_moving_is_named():
    def system_for(step):
        return system("You are Agent X.", "Body", "Tail", breakpoint_at=1 if step == 1 else 2)

    result = prefix.check(context(*conversation([("a", "1"), ("b", "2")], system_for)))
    assert result.verdict == "fail" and "cache breakpoint moved from block 1 to 2" in result.message


def test_prefix_without_breakpoints_compares_every_block():
    def system_for(step):
        return system("You are Agent X.", f"Tail {step}", breakpoint_at=None)

    assert prefix.check(context(*conversation([("a", "1"), ("b", "2")], system_for))).verdict == "fail"


def test_first_difference_cases():
    assert first_difference(b"abc", b"abc") is None
    assert first_difference(b"abc", b"abd").offset == 2
    shorter = first_difference(b"abc", b"abcdef")
    assert (shorter.offset, shorter.expected_length, shorter.observed_length) == (3, 3, 6)
    assert "<end>" in shorter.expected_context
    multibyte = first_difference("é1".encode(), "é2".encode())
    assert multibyte.offset == 2


# ----------------------------------------------------------------- history_preserved


def test_history_passes_for_a_correct_conversation():
    assert history.check(context(*conversation([("a", "1"), ("b", "2"), ("c", "3")]))).verdict == "pass"


def test_history_missing_last_reply_fails_with_the_missing_item():
    first = exchange(1, 1, system("You are X."), [user("What is 6*7?")], "41")
    second = exchange(2, 2, system("You are X."), [user("What is 6*7?", "Your answer was incorrect.")], "42")
    result = history.check(context(first, second))
    assert result.verdict == "fail" and result.step == 2
    assert '"text": "41"' in result.expected and result.expected.startswith("assistant")
    assert result.observed.startswith("user") and "incorrect" in result.observed


def test_history_rewritten_earlier_turn_fails():
    first = exchange(1, 1, system("You are X."), [user("original question")], "1")
    second = exchange(2, 2, system("You are X."), [user("edited question"), assistant("1"), user("next")])
    result = history.check(context(first, second))
    assert result.verdict == "fail" and "item 0" in result.message


def test_history_ignores_message_boundaries_cache_markers_and_thinking():
    first = exchange(1, 1, system("You are X."), [user("q1")],
                     [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "a1"}])
    marked = {"role": "user", "content": [{"type": "text", "text": "q2", "cache_control": {"type": "ephemeral"}}]}
    second = exchange(2, 2, system("You are X."), [user("q1"), assistant("a1"), marked])
    assert history.check(context(first, second)).verdict == "pass"


def test_history_within_a_tool_loop():
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "2*2"}}
    result_block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}
    first = exchange(1, 1, system("You are X."), [user("2*2?")], [tool_use])
    second = exchange(2, 1, system("You are X."), [user("2*2?"), {"role": "assistant", "content": [tool_use]},
                                                  {"role": "user", "content": [result_block]}], "4")
    assert history.check(context(first, second)).verdict == "pass"
    wrong_id = dict(tool_use, id="toolu_other")
    third = exchange(2, 1, system("You are X."), [user("2*2?"), {"role": "assistant", "content": [wrong_id]}])
    assert history.check(context(first, third)).verdict == "fail"


def test_history_after_compaction_must_carry_the_summary():
    first = exchange(1, 1, system("You are X."), [user("q1")], "a1")
    squash = compaction(2, 2, [user("q1"), assistant("a1")], "The user asked q1.")
    carried = exchange(3, 3, system("You are X."), [user("Summary:\nThe user asked q1.", "q2")])
    lost = exchange(3, 3, system("You are X."), [user("q2")])
    assert history.check(context(first, squash, carried)).verdict == "pass"
    result = history.check(context(first, squash, lost))
    assert result.verdict == "fail" and "compacted (request #2)" in result.message


def test_a_summary_carried_in_the_system_prompt_is_carried_and_said_so():
    """code-puppy puts its compaction summary in front of its system prompt, not into the messages."""
    first = exchange(1, 1, system("You are X."), [user("q1")], "a1")
    squash = compaction(2, 2, [user("q1"), assistant("a1")], "The user asked q1.")
    in_system = exchange(3, 3, system("Summary of previous conversation:\n\nThe user asked q1.", "You are X."), [user("q2")])
    elsewhere = exchange(3, 3, system("Summary of previous conversation:\n\nsomething else", "You are X."), [user("q2")])
    result = history.check(context(first, squash, in_system))
    assert result.verdict == "pass" and "summary rides in the system prompt at request(s) #3" in result.message
    assert history.check(context(first, squash, elsewhere)).verdict == "fail"


# ----------------------------------------------------------------- a failing verdict's requests (report.html's evidence)


def test_a_failing_verdict_carries_its_requests_marked_as_the_checks_read_them():
    billing = {"text": "x-anthropic-billing-header: APPENDED RULES", "cache_control": None, "cache_key": False}
    first = exchange(1, 1, [billing, *system("Preamble.", "You are Agent X.\nAPPENDED RULES")], [user("a")])
    moved = exchange(2, 2, [billing, *system("Preamble!", "You are Agent X.")], [user("a"), assistant("1"), user("b")])
    result = run_check(prefix.NAME, context(first, moved))
    assert result.verdict == "fail"
    pair = result.request_pair
    assert (pair.first.seq, pair.pointed.seq) == (1, 2) and pair.pointed.where == "step 2 (resume), request #2"
    assert pair.prefix_difference.offset == result.evidence["offset"] == len("Preamble")
    left = pair.first
    assert left.prefix.text == system_prefix(first).decode() and left.prefix_blocks == (1, 2)
    identity_mark = next(m for m in left.prefix.marks if m.kind == "identity")
    assert left.prefix.text[identity_mark.start:identity_mark.end] == left.identity == "You are Agent X."
    assert (left.appended, left.appended_in_prefix) == (2, 1)  # once in the prefix, once in the metadata block
    assert [(b.index, b.why) for b in left.outside] == [(0, "metadata, outside the cache key")]
    assert [b.shown.text[m.start:m.end] for b in left.outside for m in b.shown.marks] == ["APPENDED RULES"]
    assert (pair.pointed.appended, pair.pointed.appended_in_prefix) == (1, 0)


def test_a_passing_verdict_carries_no_requests():
    assert run_check(prefix.NAME, context(*conversation([("a", "1"), ("b", "2")]))).request_pair is None


def test_prefix_growth_behind_an_attribution_line_in_the_same_block_is_seen():
    """Older Inspect bridges join Claude Code's attribution header and the whole system prompt in one block: only
    the header line is metadata (its hash changes per request), so a prompt that grows there fails, and one that
    does not passes whatever the header says."""
    from harness.fakeapi.formats.anthropic import _normalize_system

    def system_for(header: str, body: str):
        return _normalize_system([{"type": "text", "text": f"x-anthropic-billing-header: cch={header};\n{body}",
                                   "cache_control": {"type": "ephemeral"}}])

    grows = conversation([("a", "1"), ("b", "2")], lambda s: system_for(f"h{s}", "You are Agent X.\n" + "Body. " * s))
    result = prefix.check(context(*grows))
    assert result.verdict == "fail" and result.step == 2
    assert "not compared: the first line of system block(s) 0" in result.message
    steady = conversation([("a", "1"), ("b", "2")], lambda s: system_for(f"h{s}", "You are Agent X.\nBody."))
    assert prefix.check(context(*steady)).verdict == "pass"
