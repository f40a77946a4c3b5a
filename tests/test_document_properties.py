"""Hypothesis over scenario and target documents: valid ones mutated, run through the real CLI (issue 18).

Seeds: the library's scenarios, examples/minimal-agent/target.yaml and a
generated valid scenario.  Mutations: keys dropped, renamed and retyped,
control characters (NUL, escapes, lone surrogates), huge values, raw YAML
(deep nesting, impossible dates, odd tags, recursive and undefined aliases),
aliases (shared, recursive, bombs), and damage to the text itself.  The
property (tests/cli_outcome.py): exit 0, 1 or 2, never a traceback, and exit 2
is one `harness: error:` line naming the file.  A scenario runs on the
in-process reference agent (one in four as a process) and a target on a
one-step scenario, so each example stays short; the budget is the `ci`
profile's, scaled by the profile loaded (HYPOTHESIS_PROFILE=deep: ten times as many).
What the property found outside the document readers is pinned at the end.
"""

from __future__ import annotations

import copy
import functools
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cli_outcome import assert_kept_promise, run_in_process, run_installed
from harness.checks import CHECK_NAMES
from harness.scenario.model import FAULT_KINDS, STEP_KINDS, STOP_REASONS
from harness.documents.located import load_located_file, to_plain

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_SEEDS = sorted((ROOT / "scenarios").rglob("*.yaml"))
TARGET_SEED = ROOT / "examples" / "minimal-agent" / "target.yaml"
ONE_STEP = ("name: one-step\nappend: Be brief.\nsteps:\n  - launch: {prompt: hi, reply: hello}\n"
            "checks: [identity_stable, appended_exactly_once]\n")
_CI_BUDGET = 100  # the ci profile's max_examples: what the numbers below are written for
# Words the readers know, so renames and retypes reach past the first check as often as they stop at it.
VOCABULARY = (
    "name", "description", "append", "temporary", "min_cache_reuse", "workdir", "steps", "checks", "expect",
    "prompt", "reply", "error", "summary", "usage", "timeout_s", "edit", "commit", "prefix_change",
    "text", "thinking", "tool_use", "content", "stop_reason", "fault", "input", "id", "status", "type", "message",
    "retry_after", "kind", "after_events", "seconds", "input_tokens", "output_tokens", "cache_read_input_tokens",
    "protocol", "repo", "rev", "session_id", "steps_without_session_id", "identity", "env", "side_calls", "stdout_json", "stdout_regex", "regex",
    "git", "plain", "pass", "fail", "{prompt}", "{append}", "{session_id}", "{checkout}", "{temporary}",
    *STEP_KINDS, *FAULT_KINDS, *STOP_REASONS, *CHECK_NAMES,
)
CONTROL = ("\0", "\x01", "\x07", "\b", "\t", "\n", "\r", "\x1b[2J", "\x7f", "\x85", "\x9f", "\u2028", "\ufeff",
           "\ud800", "\udfff", "\U0010ffff")
RAW_TOKEN = "rawyamlhere"  # stands where document_text splices in one of RAW_YAML: what yaml.safe_dump would quote
RAW_YAML = (
    "[" * 99 + "0" + "]" * 99, "[" * 100 + "0" + "]" * 100, "{a: " * 101 + "0" + "}" * 101, "[" * 10_000 + "]" * 10_000,
    "2024-13-45", "2024-02-30 10:00:00", "9" * 5_000, "0x" + "f" * 5_000, "1e99999", ".nan", "!!bool maybe",
    "!!timestamp soon", "!!int x", "!!float x", "!!binary '*'", "!!set {a: 1}", "!!omap [1]", "!!str [1]", "!!",
    "!!python/object/apply:os.system [echo]", "&x [*x]", "&y {k: *y}", "*undefined", "{a: 1, a: 2}", "{? [a]: 1}",
    "{<<: 1}", "'\\ud800'", "\"\\ud83d\\ude00\"", "\"\\0\"", "\"\\x1b[2J\\r\\x85\"", "|\n  block\n",
)


def budget(ci_examples: int) -> int:
    """``ci_examples`` under the ci profile, scaled by the profile loaded: ten times as many under deep."""
    return max(1, settings.default.max_examples * ci_examples // _CI_BUDGET)


@functools.cache
def seed(path: Path) -> Any:
    """The document as plain data; shared between examples, so every mutation works on a deep copy."""
    return to_plain(load_located_file(path))


# --------------------------------------------------------------------------- locations in a document


def locations(doc: Any) -> list[tuple]:
    """Every path below the root, parents first; a value reached again (an alias) is not walked twice."""
    found: list[tuple] = []
    seen: set[int] = set()

    def walk(value: Any, path: tuple) -> None:
        if not isinstance(value, (dict, list)) or id(value) in seen:
            return
        seen.add(id(value))
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        for key, item in items:
            found.append((*path, key))
            walk(item, (*path, key))

    walk(doc, ())
    return found


def parent_of(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def value_at(doc: Any, path: tuple) -> Any:
    return parent_of(doc, path)[path[-1]] if path else doc


# --------------------------------------------------------------------------- mutations


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([10**30, -(2**63), 2**64]),
    st.sampled_from([0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")]),
    st.text(max_size=12), st.just(""), st.just("   "), st.sampled_from(VOCABULARY), st.dates(),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(VOCABULARY) | st.text(max_size=6),
                                                                       inner, max_size=3)), max_leaves=6)


def bomb(levels: int) -> list:
    """9**levels strings once written out; yaml.safe_dump writes the shared lists as anchors and aliases."""
    value: list = ["lol"] * 9
    for _ in range(levels - 1):
        value = [value] * 9
    return value


def mutate(data: st.DataObject, doc: Any) -> Any:
    """``doc`` (the caller's copy) mutated once in place, or a new document when there is nothing below the root."""
    paths = locations(doc)
    kinds = ["retype", "alias", "bomb", "raw", "raw", "huge"] + (["drop", "rename", "control", "control"] if paths else [])
    kind = data.draw(st.sampled_from(kinds), label="mutation")
    # Structure goes where structure is, as often as anywhere: a tool's input is the one value copied whole.
    containers = [p for p in paths if isinstance(value_at(doc, p), (dict, list))]
    where_from = containers if kind in ("alias", "bomb", "raw") and containers and data.draw(st.booleans()) else paths
    path = data.draw(st.sampled_from(where_from), label="at") if paths else ()
    if not path and kind not in ("drop", "rename", "control"):
        return {"retype": data.draw(values), "alias": doc, "bomb": bomb(9), "raw": RAW_TOKEN,
                "huge": "x" * 200_000}[kind]
    parent, key = parent_of(doc, path), path[-1]
    if kind == "drop":
        del parent[key]
    elif kind == "rename" and isinstance(parent, dict):
        new = data.draw(st.one_of(st.sampled_from(VOCABULARY), st.text(max_size=10), scalars,
                                  st.just(f"{key}s"), st.just(str(key)[:-1]), st.just(str(key).upper())), label="new key")
        value = parent.pop(key)
        try:
            parent[new] = value
        except TypeError:  # an unhashable draw: the key is dropped instead
            pass
    elif kind == "control":
        strings = [p for p in paths if isinstance(value_at(doc, p), str)]
        if strings:
            where = data.draw(st.sampled_from(strings), label="string")
            text = value_at(doc, where)
            at = data.draw(st.integers(0, len(text)), label="offset")
            char = data.draw(st.one_of(st.sampled_from(("\0", "\ud83d")), st.sampled_from(CONTROL)), label="char")
            parent_of(doc, where)[where[-1]] = text[:at] + char + text[at:]
    elif kind == "retype" or kind == "rename":  # a list item has no key to rename: it is retyped
        parent[key] = data.draw(values, label="value")
    elif kind == "alias":  # a second reference: may be an ancestor of itself, which is a recursive alias
        parent[key] = value_at(doc, data.draw(st.sampled_from(paths), label="alias of"))
    elif kind == "bomb":  # a mapping of one bomb fits where a tool's arguments go, the one value copied whole
        laughs = bomb(data.draw(st.integers(2, 9), label="levels"))
        parent[key] = {"lol": laughs} if data.draw(st.booleans(), label="in a mapping") else laughs
    elif kind == "raw":
        parent[key] = RAW_TOKEN
    else:
        parent[key] = data.draw(st.sampled_from(["x" * 140_000, "y" * 400_000, list(range(5_000)),
                                                 {f"k{i}": i for i in range(5_000)}]), label="huge")
    return doc


def document_text(data: st.DataObject, doc: Any) -> bytes:
    """``doc`` as YAML in one of several styles, with raw YAML spliced in and, at times, the text itself damaged."""
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=data.draw(st.booleans(), label="unicode"),
                          default_flow_style=data.draw(st.sampled_from([False, None, True]), label="flow"),
                          width=data.draw(st.sampled_from([80, 10**6]), label="width"))
    text = re.sub(f"['\"]?{RAW_TOKEN}['\"]?", lambda _: data.draw(st.sampled_from(RAW_YAML), label="raw"), text)
    damage = data.draw(st.sampled_from(["none", "none", "insert", "truncate"]), label="damage")
    if damage != "none" and text:
        at = data.draw(st.integers(0, len(text)), label="text offset")
        if damage == "insert":
            text = text[:at] + data.draw(st.sampled_from(CONTROL + ("\t", ": ", "- ", "&a ", "*a", "!!", "{", "'")),
                                         label="inserted") + text[at:]
        else:
            text = text[:at]
    return text.encode("utf-8", "surrogatepass")


def mutated(data: st.DataObject, doc: Any) -> bytes:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(0, 3), label="mutations")):
        doc = mutate(data, doc)
    return document_text(data, doc)


# --------------------------------------------------------------------------- a generated valid scenario

words = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), min_size=1, max_size=16).filter(str.strip)
tool_calls = st.fixed_dictionaries({"tool_use": st.fixed_dictionaries(
    {"name": st.sampled_from(["Bash", "Read"]), "input": st.dictionaries(st.sampled_from(["command", "path"]), words,
                                                                          min_size=1, max_size=2)})})
turns = st.one_of(words, st.fixed_dictionaries({"text": words}), tool_calls)


def step(kind: str) -> st.SearchStrategy:
    body = {"reply": st.one_of(words, st.lists(turns, min_size=1, max_size=3))}
    if kind == "launch":  # one tool call at least: its input is the one value a reader copies whole
        body["reply"] = st.tuples(tool_calls, st.lists(turns, max_size=2)).map(lambda parts: [parts[0], *parts[1]])
    if kind != "compact":
        body["prompt"] = words
    return st.fixed_dictionaries({kind: st.fixed_dictionaries(body)})


generated_scenarios = st.builds(
    lambda first, rest, append: {"name": "generated", "append": append, "steps": [first, *rest]},
    step("launch"), st.lists(st.sampled_from(("resume", "retry", "compact")).flatmap(step), max_size=3), words,
)


# --------------------------------------------------------------------------- the properties


def fresh_folder(factory: pytest.TempPathFactory) -> Path:
    return Path(tempfile.mkdtemp(dir=factory.getbasetemp()))


def run_scenario_document(folder: Path, text: bytes, target: str = "reference+in-process"):
    scenario = folder / "scenario.yaml"
    scenario.write_bytes(text)
    return scenario, ["run", str(scenario), "--target", target, "--report-dir", str(folder / "reports"), "--quiet"]


def run_target_document(folder: Path, text: bytes):
    target = folder / "target.yaml"
    target.write_bytes(text)
    shutil.copy(TARGET_SEED.with_name("agent.py"), folder / "agent.py")
    scenario = folder / "one-step.yaml"
    scenario.write_text(ONE_STEP)
    return [target, scenario], ["run", str(scenario), "--target", str(target), "--report-dir", str(folder / "reports"),
                                "--quiet"]


@settings(max_examples=budget(200))
@given(data=st.data())
def test_a_mutated_scenario_exits_0_1_or_2_and_never_with_a_traceback(tmp_path_factory, data):
    doc = data.draw(st.one_of(st.sampled_from(SCENARIO_SEEDS).map(seed), generated_scenarios), label="seed")
    # Now and then the reference agent as a process: what reaches exec (argv, environment, paths) is tried too.
    target = data.draw(st.sampled_from(["reference+in-process"] * 3 + ["reference"]), label="target")
    blamed, argv = run_scenario_document(fresh_folder(tmp_path_factory), mutated(data, doc), target)
    outcome = run_in_process(argv)
    event(f"exit {outcome.code}")
    assert_kept_promise(outcome, blamed)


@settings(max_examples=budget(60))
@given(data=st.data())
def test_a_mutated_target_file_exits_0_1_or_2_and_never_with_a_traceback(tmp_path_factory, data):
    blamed, argv = run_target_document(fresh_folder(tmp_path_factory), mutated(data, seed(TARGET_SEED)))
    outcome = run_in_process(argv)
    event(f"exit {outcome.code}")
    assert_kept_promise(outcome, blamed)


HANDFUL = {  # through the installed console script, as a user runs it
    "alias-bomb-in-a-reply": (SCENARIO_SEEDS[0], ("steps", 0, "launch", "reply"), bomb(9)),
    "nul-in-a-prompt": (SCENARIO_SEEDS[0], ("steps", 0, "launch", "prompt"), "What\0 is 6*7?"),
    "lone-surrogate-in-the-append": (SCENARIO_SEEDS[0], ("append",), "\ud83d"),
    "deep-tool-input": (SCENARIO_SEEDS[0], ("steps", 0, "launch", "reply"), [{"tool_use": {"name": "Bash",
                                                                                         "input": {"x": RAW_TOKEN}}}]),
    "nul-in-a-target-argv": (TARGET_SEED, ("launch", 0), "python3\0"),
    "huge-target-env": (TARGET_SEED, ("env",), {"BIG": "x" * 200_000}),
}


@pytest.mark.parametrize("case", list(HANDFUL))
def test_a_handful_through_the_installed_harness(tmp_path, case):
    seed_path, path, value = HANDFUL[case]
    doc = copy.deepcopy(seed(seed_path))
    parent_of(doc, path)[path[-1]] = value
    text = yaml.safe_dump(doc, sort_keys=False).replace(RAW_TOKEN, "[" * 10_000 + "]" * 10_000)
    folder = tmp_path / case
    folder.mkdir()
    text_bytes = text.encode("utf-8", "surrogatepass")
    if seed_path == TARGET_SEED:
        blamed, argv = run_target_document(folder, text_bytes)
    else:
        blamed, argv = run_scenario_document(folder, text_bytes, "reference")
    outcome = run_installed(argv, cwd=folder)
    assert_kept_promise(outcome, blamed)
    if seed_path != TARGET_SEED or case.startswith("nul"):
        assert outcome.code == 2, outcome.describe()


# --------------------------------------------------------------------------- found by the property, outside the readers


def test_an_unknown_placeholder_with_a_line_break_in_it_is_still_one_line(tmp_path):
    """The property's first find: validate_template wrote an unknown placeholder's name raw."""
    doc = copy.deepcopy(seed(TARGET_SEED))
    doc["launch"][1] = "{target_dir\n\x1b}/agent.py"
    blamed, argv = run_target_document(tmp_path, yaml.safe_dump(doc).encode())
    assert_kept_promise(run_in_process(argv), blamed)
