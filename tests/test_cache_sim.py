"""Simulated prompt caching and the cache_reuse check.

The rules first, on the pure PromptCache (breakpoints, the 20-block lookback,
minimum sizes by model, OpenAI's 1024/128 rounding, scripted usage winning);
then the bytes of real runs: the reference agent across processes (clean,
a defect that moves the prefix, and a task text too short to cache), and an
OpenAI-format conversation over plain HTTP to a live fake API.
"""

from __future__ import annotations

import dataclasses
import http.client
import itertools
import json
import re
from pathlib import Path

import pytest
from builders import exchange, system, user

from harness.checks import CheckContext, cache, run_check
from harness.fakeapi import cache_sim
from harness.fakeapi.cache_sim import (
    CacheFigures,
    PromptCache,
    anthropic_min_tokens,
    openai_cached_tokens,
)
from harness.journal.requests import read_journal
from harness.scenario.model import Step, TextBlock, Turn, Usage
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "cache-reuse-across-processes.yaml"
SONNET = "claude-sonnet-4-5"
BRIEF = "Rules of the task, long enough to be worth caching. " * 120  # 6,240 bytes: well past 1024 tokens
BP = {"type": "ephemeral"}
TOOL = {"name": "calculator", "description": "Evaluate an arithmetic expression.", "input_schema": {"type": "object"}}


def block(text: str, marked: bool = False) -> dict:
    return {"type": "text", "text": text, **({"cache_control": BP} if marked else {})}


def msg(role: str, *blocks: dict) -> dict:
    return {"role": role, "content": list(blocks)}


def prompt(*messages: dict, brief: str = BRIEF, brief_marked: bool = True, model: str = SONNET, tools=(TOOL,),
           automatic: bool = False) -> dict:
    """A normalized /v1/messages request: tools, one system block (the breakpoint by default), messages."""
    normalized = {"model": model, "tools": list(tools), "system": [{"text": brief, "cache_control": BP if brief_marked else None}],
                  "messages": list(messages)}
    if automatic:
        normalized["cache_control"] = BP
    return normalized


def figures_of(*requests: dict) -> list[CacheFigures]:
    """Each request's figures, answered in order by one cache."""
    cache_ = PromptCache()
    return [cache_.anthropic(r) for r in requests]


def tokens_of(normalized: dict) -> int:
    return cache_sim.estimate_tokens(len(cache_sim.prompt_bytes(normalized)))


# --------------------------------------------------------------------------- tokens and usage


def test_the_estimate_is_a_quarter_token_per_byte_rounded_up_and_covers_the_whole_prompt():
    assert [cache_sim.estimate_tokens(n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    (fig,) = figures_of(prompt(msg("user", block("hi"))))
    assert fig.prompt_tokens == fig.input_tokens + fig.cache_read_input_tokens + fig.cache_creation_input_tokens


def test_without_a_breakpoint_nothing_is_read_or_written():
    request = prompt(msg("user", block("What is 6*7?")), brief_marked=False)
    first, second = figures_of(request, request)
    assert first == second == CacheFigures(first.prompt_tokens, 0, 0)
    assert first.input_tokens == first.prompt_tokens > 1024


# --------------------------------------------------------------------------- Anthropic breakpoints


def test_a_breakpoint_writes_its_prefix_and_a_later_request_reads_it():
    first_req = prompt(msg("user", block("What is 6*7?")))
    first, again, other_question = figures_of(first_req, first_req, prompt(msg("user", block("And 2+2?"))))
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens >= 1024 and first.input_tokens > 0  # the question is after the breakpoint
    assert (again.cache_read_input_tokens, again.cache_creation_input_tokens) == (first.cache_creation_input_tokens, 0)
    assert again.input_tokens == first.input_tokens
    assert other_question.cache_read_input_tokens == first.cache_creation_input_tokens


@pytest.mark.parametrize("change", ["last byte of the system block", "tool description"])
def test_one_changed_byte_before_the_breakpoint_is_a_full_miss(change):
    moved = prompt(msg("user", block("q")), brief=BRIEF[:-1] + "!") if change.startswith("last") else \
        prompt(msg("user", block("q")), tools=[dict(TOOL, description="Evaluate it.")])
    first, second = figures_of(prompt(msg("user", block("q"))), moved)
    assert first.cache_creation_input_tokens > 1024
    assert second.cache_read_input_tokens == 0 and second.cache_creation_input_tokens > 1024  # written all over again


def test_the_marker_itself_is_not_part_of_the_key_and_reads_extend_to_the_last_breakpoint():
    """A rolling breakpoint (moved to the newest message each turn) still reads what the last turn wrote."""
    turn1 = prompt(msg("user", block("What is 6*7?", marked=True)))
    turn2 = prompt(msg("user", block("What is 6*7?")), msg("assistant", block("42")), msg("user", block("And 2+2?", marked=True)))
    first, second = figures_of(turn1, turn2)
    assert first.cache_creation_input_tokens == first.prompt_tokens  # everything up to the last breakpoint
    assert second.cache_read_input_tokens == first.prompt_tokens
    assert second.cache_creation_input_tokens == second.prompt_tokens - first.prompt_tokens
    assert second.input_tokens == 0


def test_the_hit_is_the_longest_written_prefix_and_the_write_runs_from_it_to_the_last_breakpoint():
    turn1 = prompt(msg("user", block("What is 6*7?")))  # writes tools + system only
    turn2 = prompt(msg("user", block("What is 6*7?")), msg("assistant", block("42")), msg("user", block("And 2+2?", marked=True)))
    first, second = figures_of(turn1, turn2)
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == second.prompt_tokens - first.cache_creation_input_tokens


def _grown(extra_blocks: int) -> dict:
    """The first turn plus `extra_blocks` new content blocks, the breakpoint on the last one only."""
    answer = [block(f"part {i}") for i in range(extra_blocks - 1)]
    return prompt(msg("user", block("Start.")), msg("assistant", *answer), msg("user", block("Next.", marked=True)),
                  brief_marked=False)


@pytest.mark.parametrize("extra, hit", [(20, True), (21, False)])
def test_the_lookback_reaches_20_blocks_before_a_breakpoint_and_no_further(extra, hit):
    first_turn = prompt(msg("user", block("Start.", marked=True)), brief_marked=False)
    first, grown = figures_of(first_turn, _grown(extra))
    assert first.cache_creation_input_tokens == first.prompt_tokens > 1024
    assert grown.cache_read_input_tokens == (first.prompt_tokens if hit else 0)
    assert grown.prompt_tokens == grown.cache_read_input_tokens + grown.cache_creation_input_tokens


def test_a_top_level_cache_control_marks_the_last_block_automatic_caching():
    turn1 = prompt(msg("user", block("What is 6*7?")), brief_marked=False, automatic=True)
    turn2 = prompt(msg("user", block("What is 6*7?")), msg("assistant", block("42")), msg("user", block("And 2+2?")),
                   brief_marked=False, automatic=True)
    first, second = figures_of(turn1, turn2)
    assert first.cache_creation_input_tokens == first.prompt_tokens
    assert second.cache_read_input_tokens == first.prompt_tokens


def test_each_model_has_its_own_cache():
    first, other_model = figures_of(prompt(msg("user", block("q"))), prompt(msg("user", block("q")), model="claude-opus-4-1"))
    assert other_model.cache_read_input_tokens == 0 and other_model.cache_creation_input_tokens == first.cache_creation_input_tokens


def test_a_metadata_block_outside_the_cache_key_does_not_break_the_hit():
    def with_header(n: int) -> dict:
        request = prompt(msg("user", block("q")))
        request["system"].insert(0, {"text": f"x-anthropic-billing-header: cch={n}", "cache_control": None, "cache_key": False})
        return request

    first, second = figures_of(with_header(1), with_header(2))
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens > 0


# --------------------------------------------------------------------------- minimum cacheable length


def test_minimum_cacheable_length_by_model_name():
    assert {m: anthropic_min_tokens(m) for m in (
        "claude-sonnet-4-5", "claude-opus-4-1", "claude-3-7-sonnet-latest", "reference-model-1",
        "claude-opus-4-5", "claude-haiku-4-5", "claude-3-5-haiku-20241022", "claude-3-haiku-20240307",
    )} == {
        "claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-3-7-sonnet-latest": 1024, "reference-model-1": 1024,
        "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-3-5-haiku-20241022": 2048, "claude-3-haiku-20240307": 2048,
    }


def _prefix_of_tokens(n: int, model: str = SONNET) -> dict:
    """A request whose whole prompt (the breakpoint on its only block) is exactly n tokens."""
    for size in range(4 * n - 40, 4 * n + 40):
        request = prompt(brief="r" * size, tools=(), model=model)
        if tokens_of(request) == n:
            return request
    raise AssertionError(f"no brief of {n} tokens")


@pytest.mark.parametrize("model, cacheable, too_short", [
    (SONNET, 1024, 1023), ("claude-3-5-haiku-20241022", 2048, 2047), ("claude-haiku-4-5", 4096, 4095),
])
def test_a_prefix_below_the_minimum_is_neither_written_nor_read(model, cacheable, too_short):
    short = _prefix_of_tokens(too_short, model)
    first, second = figures_of(short, short)
    assert (first.cache_creation_input_tokens, second.cache_read_input_tokens) == (0, 0)
    enough = _prefix_of_tokens(cacheable, model)
    first, second = figures_of(enough, enough)
    assert (first.cache_creation_input_tokens, second.cache_read_input_tokens) == (cacheable, cacheable)


# --------------------------------------------------------------------------- OpenAI


def test_openai_rounds_the_common_prefix_down_to_1024_plus_a_multiple_of_128():
    assert [openai_cached_tokens(n) for n in (0, 1023, 1024, 1151, 1152, 1279, 5000)] == [0, 0, 1024, 1024, 1152, 1152, 4992]


def test_openai_caches_every_prompt_and_reads_the_longest_common_prefix():
    turn1 = {"model": "gpt-test-1", "tools": [], "system": [{"text": BRIEF, "cache_control": None}],
             "messages": [msg("user", block("What is 6*7?"))]}
    turn2 = dict(turn1, messages=turn1["messages"] + [msg("assistant", block("42")), msg("user", block("And 2+2?"))])
    cache_ = PromptCache()
    first, second = cache_.openai("openai-chat", turn1), cache_.openai("openai-chat", turn2)
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens == 0
    assert second.cache_read_input_tokens == openai_cached_tokens(tokens_of(turn1)) > 0
    assert (second.cache_read_input_tokens - 1024) % 128 == 0 and second.cache_creation_input_tokens == 0
    assert cache_.openai("openai-responses", turn2).cache_read_input_tokens == 0  # another format, another cache
    small = dict(turn1, system=[{"text": "short", "cache_control": None}])
    assert [cache_.openai("openai-chat", small).cache_read_input_tokens for _ in range(2)] == [0, 0]


# --------------------------------------------------------------------------- scripted usage wins


def test_scripted_usage_wins_field_by_field_turn_before_step():
    figures = CacheFigures(2000, cache_read_input_tokens=1500, cache_creation_input_tokens=300)
    blocks = [{"type": "text", "text": "42"}]
    assert cache_sim.resolve_usage(figures, blocks) == {
        "input_tokens": 200, "output_tokens": 1, "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 300}
    turn, step = Usage(cache_read_input_tokens=7), Usage(cache_read_input_tokens=9, cache_creation_input_tokens=0, input_tokens=5)
    assert cache_sim.resolve_usage(figures, blocks, turn, step) == {
        "input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 0}
    assert cache_sim.resolve_usage(figures, blocks, None, Usage(input_tokens=11))["cache_read_input_tokens"] == 1500


def _post(server, path: str, body: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers={"content-type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        return json.loads(response.read())
    finally:
        conn.close()


def _step(*turns: Turn) -> Step:
    return Step(index=1, kind="launch", prompt="p", turns=turns)


def test_the_live_api_simulates_unless_the_scenario_scripted_the_field(served):
    api, server, journal_path = served
    api.begin_step(_step(Turn((TextBlock("42"),)), Turn((TextBlock("42"),), usage=Usage(cache_read_input_tokens=5))))
    body = {"model": SONNET, "max_tokens": 10, "system": [block(BRIEF, marked=True)], "messages": [msg("user", block("q"))]}
    first, second = _post(server, "/v1/messages", body)["usage"], _post(server, "/v1/messages", body)["usage"]
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 1024
    assert second["cache_read_input_tokens"] == 5  # scripted
    assert second["cache_creation_input_tokens"] == 0 and second["input_tokens"] == first["input_tokens"]  # simulated
    assert [e.reply["usage"] for e in read_journal(journal_path)] == [first, second]


# --------------------------------------------------------------------------- the check, on synthetic journals


def _journal(*usages: dict, protocol: str = "anthropic") -> list:
    out = []
    for i, usage in enumerate(usages, start=1):
        e = exchange(i, i, system("You are Agent X.", "Body"), [user(f"q{i}")])
        e.reply["usage"], e.protocol = usage, protocol
        out.append(e)
    return out


def _context(exchanges, floor=0.8) -> CheckContext:
    return CheckContext(tuple(exchanges), None, re.compile("You are"), min_cache_reuse=floor)


def _u(read: int, written: int, uncached: int) -> dict:
    return {"input_tokens": uncached, "output_tokens": 1, "cache_read_input_tokens": read, "cache_creation_input_tokens": written}


def test_cache_reuse_is_an_error_when_there_is_nothing_to_judge():
    assert cache.check(_context([])).verdict == "error"
    only_one = cache.check(_context(_journal(_u(0, 1000, 10))))
    assert only_one.verdict == "error" and "nothing after the first to judge" in only_one.message
    assert cache.check(_context(_journal(_u(0, 1000, 10), _u(1000, 10, 0)), floor=None)).verdict == "error"
    no_usage = cache.check(_context(_journal({}, {})))  # e.g. a journal of replies that carried no usage
    assert no_usage.verdict == "error" and "no prompt tokens" in no_usage.message


def test_cache_reuse_names_the_first_step_whose_reuse_dropped_and_what_it_cost():
    journal = _journal(_u(0, 1000, 10), _u(1000, 50, 10), _u(0, 1100, 10), _u(1100, 20, 0))
    result = cache.check(_context(journal))
    assert result.verdict == "fail" and (result.step, result.request) == (3, 3)
    assert "reuse dropped at step 3 (resume), request #3: 1,050 tokens the previous main request left" in result.message
    assert "step 2 (resume), request(s) #2: prompt 1,060, read 1,000, written 50, reuse 94.3%, drift cost 0 tokens" in result.message
    assert "step 3 (resume), request(s) #3: prompt 1,110, read 0, written 1,100, reuse 0.0%, drift cost 1,050 tokens" in result.message
    assert result.observed == round(2100 / 3290, 4)
    assert [s["drift_cost_tokens"] for s in result.evidence["by_step"]] == [0, 1050, 0]
    assert cache.check(_context(journal, floor=2100 / 3290)).verdict == "pass"  # the floor itself passes


def test_cache_reuse_says_when_nothing_was_ever_cached():
    result = cache.check(_context(_journal(_u(0, 0, 1500), _u(0, 0, 1510))))
    assert result.verdict == "fail" and "nothing was ever written to the cache" in result.message


def test_cache_reuse_on_an_openai_journal_shows_no_written_tokens():
    journal = _journal({"input_tokens": 1300, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                       {"input_tokens": 60, "cache_read_input_tokens": 1280, "cache_creation_input_tokens": 0},
                       protocol="openai-chat")
    result = cache.check(_context(journal))
    assert result.verdict == "pass" and "written" not in result.message
    assert "read 1,280, reuse 95.5%, drift cost 0 tokens" in result.message  # 1300 tokens left 1280 (rounded) in cache


# --------------------------------------------------------------------------- real runs


def _cache_verdict(result):
    assert result.status != "error", result.error
    (check,) = [c for c in result.checks if c.check == cache.NAME]
    return check


def test_the_reference_agent_reuses_its_cache_across_processes(run):
    (target,) = resolve_target("reference")
    result = run(load_scenario(SCENARIO), target)
    check = _cache_verdict(result)
    assert check.verdict == "pass", check.message
    usages = [e.reply["usage"] for e in read_journal(Path(result.journal)) if e.klass == "main"]
    assert len(usages) == 3
    # What the agent really sends: its system breakpoint prefix is past the 1024-token minimum, and each
    # later process reads everything the previous one sent.
    assert usages[0]["cache_creation_input_tokens"] > 1024 and usages[0]["cache_read_input_tokens"] == 0
    for before, after in itertools.pairwise(usages):
        assert after["cache_read_input_tokens"] == before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]


def test_a_defect_that_moves_the_prefix_fails_cache_reuse_at_its_first_step(run):
    (target,) = resolve_target("reference:fresh-identity-per-process")
    check = _cache_verdict(run(load_scenario(SCENARIO), target))
    assert check.verdict == "fail" and check.step == 2
    assert "reuse dropped at step 2 (resume)" in check.message and "billed again at the full price" in check.message
    assert check.evidence["by_step"][0]["drift_cost_tokens"] > 1024


def test_a_task_text_below_the_minimum_is_never_cached(run):
    """The same clean agent with a short append: every request is below 1024 tokens, so nothing is cached."""
    (target,) = resolve_target("reference")
    scenario = dataclasses.replace(load_scenario(SCENARIO), append="Task prompt: answer with one number.")
    check = _cache_verdict(run(scenario, target))
    assert check.verdict == "fail" and "nothing was ever written to the cache" in check.message


def test_an_openai_conversation_gets_cached_tokens_by_the_rounding_rule(served):
    api, server, journal_path = served
    api.begin_step(_step(*(Turn((TextBlock(t),)) for t in ("42", "4", "8"))))
    messages = [{"role": "system", "content": BRIEF}, {"role": "user", "content": "What is 6*7?"}]
    usages = [_post(server, "/v1/chat/completions", {"model": "gpt-test-1", "messages": messages})["usage"]]
    for answer, question in (("42", "And 2+2?"), ("4", "And 4+4?")):
        messages = messages + [{"role": "assistant", "content": answer}, {"role": "user", "content": question}]
        usages.append(_post(server, "/v1/chat/completions", {"model": "gpt-test-1", "messages": messages})["usage"])
    assert usages[0]["prompt_tokens_details"]["cached_tokens"] == 0
    journal = read_journal(journal_path)
    for i in (1, 2):
        earlier, now = cache_sim.prompt_bytes(journal[i - 1].normalized), cache_sim.prompt_bytes(journal[i].normalized)
        common = next((n for n in range(min(len(earlier), len(now))) if earlier[n] != now[n]), min(len(earlier), len(now)))
        common_tokens = -(-common // 4)
        expected = 1024 + (common_tokens - 1024) // 128 * 128
        cached = usages[i]["prompt_tokens_details"]["cached_tokens"]
        assert cached == expected and cached <= usages[i]["prompt_tokens"]
    result = run_check(cache.NAME, CheckContext(tuple(journal), None, re.compile("x"), min_cache_reuse=0.8))
    assert result.verdict == "pass" and "written" not in result.message, result.message
