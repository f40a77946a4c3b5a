"""report.html of `harness diff`: built from real differential runs of the reference agent, read two ways.

The unit tests parse the HTML with the standard library and hold it to the
Comparison it renders: matrix cells, per-step cells, timelines, escaping, no
external resource, and the first-difference mark sitting exactly at the byte
offset prefix_stable reports. The browser test opens the written file in
Debian's headless Chromium with the network switched off and checks what a
person would see: the matrix, its colours, and the highlighted byte.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from builders import assistant, exchange, system, user
from offline_browser import offline_page
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks import prefix
from harness.checks.context import CheckContext
from harness.checks.identity import identity_of
from harness.checks.prefix import system_prefix
from harness.journal.requests import read_journal
from harness.run.differential import compare
from harness.report.html import render_comparison, write_comparison
from harness.report.html_diffview import diff_view
from harness.report.html_text import Span, marked
from harness.checks import run_check
from harness.results import CheckResult, Comparison
from harness.scenario.reader import load_scenarios, scenario_from_text
from harness.targets import resolve_target
from harness.targets.base import SessionIdSource, Target

ROOT = Path(__file__).resolve().parent.parent
RETRY = ROOT / "scenarios" / "retry-after-wrong-answer.yaml"
COMPACTION = ROOT / "scenarios" / "compaction-then-resume.yaml"
AGENTS = ROOT / "tests" / "agents"

HOSTILE = """\
name: hostile-text
description: "</style><script>alert('description')</script>\\a<b>bell</b>"
append: "Rules <script>alert(1)</script> & <img src=x onerror=alert(2)>"
steps:
  - launch: {prompt: "<img src=x onerror=alert(3)> What is 6*7?", reply: "41 </pre><script>alert(4)</script>"}
  - resume: {prompt: "</textarea><script>alert(5)</script>", reply: "42"}
"""
THREE_STEPS = """\
name: three-steps
append: "Appended rules."
steps:
  - launch: {prompt: "one", reply: "1"}
  - resume: {prompt: "two", reply: "2"}
  - resume: {prompt: "three", reply: "3"}
"""
LONG_APPEND = "Task rules: " + " ".join(f"rule {i} must be followed." for i in range(120))


def long_append_scenario() -> str:
    return (f'name: long-append\nappend: "{LONG_APPEND}"\nsteps:\n'
            '  - launch: {prompt: "What is 6*7?", reply: "41"}\n'
            '  - retry: {prompt: "Wrong. Try again.", reply: "42"}\n')


class Comparisons:
    """Real differential runs, each made on first use (about 0.6 s each), so an xdist worker runs only what its tests read."""

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.made: dict[str, Comparison] = {}

    def __getitem__(self, name: str) -> Comparison:
        if name not in self.made:
            scenarios, baseline, candidate = {
                "regression": ([RETRY], "reference", "reference:drop-append-on-resume"),
                "fix": ([RETRY], "reference:drop-append-on-resume", "reference"),
                "timestamp": ([RETRY, COMPACTION], "reference", "reference:timestamp-in-prefix"),
                "identity": ([RETRY], "reference", "reference:fresh-identity-per-process"),
                "history": ([RETRY], "reference", "reference:forget-last-reply"),
                "hostile": ([HOSTILE], "reference", "reference:drop-append-on-resume"),
                "long": ([long_append_scenario()], "reference", "reference:timestamp-in-prefix"),
                "error": ([THREE_STEPS], str(AGENTS / "good.yaml"), str(AGENTS / "crash.yaml")),
            }[name]
            loaded = [load_scenarios([s])[0] if isinstance(s, Path) else scenario_from_text(s) for s in scenarios]
            journal = self.tmp_path_factory.mktemp(f"journal-{name}")
            self.made[name] = compare(loaded, resolve_target(baseline)[0], resolve_target(candidate)[0], journal)
        return self.made[name]


@pytest.fixture(scope="module")
def comparisons(tmp_path_factory) -> Comparisons:
    return Comparisons(tmp_path_factory)


# --------------------------------------------------------------------------- a small DOM from html.parser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict, parent: Node | None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def iter(self):
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list[Node]:
        return [n for n in self.iter()
                if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)
                and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag} class={cls} {attrs}> in <{self.tag} {self.attrs}>"
        return found[0]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def text_before(self, target: Node) -> str:
        """This node's text up to (not including) the descendant `target`."""
        out: list[str] = []

        def walk(node: Node) -> bool:
            for child in node.children:
                if child is target:
                    return True
                if isinstance(child, str):
                    out.append(child)
                elif walk(child):
                    return True
            return False

        assert walk(self), "target is not inside this node"
        return "".join(out)

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class Tree(HTMLParser):
    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#document", {}, None)
        self.tags: list[tuple[str, dict]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.tags.append((tag, dict(attrs)))
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node.parent is not None and node.tag != tag:
            node = node.parent
        assert node.tag == tag, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def dom(comparison: Comparison, command=None) -> Node:
    return Tree(render_comparison(comparison, command)).root


def view(doc: Node, check: str, side: str, scenario: str | None = None) -> Node:
    views = [v for v in doc.find_all("section", cls="diff-view", data_check=check, data_side=side)
             if scenario is None or v.attrs["data-scenario"] == scenario]
    assert len(views) == 1, f"{len(views)} diff views for {check} on the {side} side"
    return views[0]


def check_result(comparison: Comparison, side: str, check: str, scenario: int = 0):
    return next(c for c in getattr(comparison.scenarios[scenario], side).checks if c.check == check)


def journal(sd, side: str = "candidate") -> list:
    """The side's request journal as the run wrote it."""
    return read_journal(Path(getattr(sd, side).journal))


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


# --------------------------------------------------------------------------- header and matrix


@pytest.mark.parametrize("name", ["regression", "fix", "timestamp", "identity", "history"])
def test_matrix_cells_carry_the_comparisons_final_changes(comparisons, name):
    comparison = comparisons[name]
    matrix = dom(comparison).find("table", id="matrix")
    rows = matrix.find("tbody").find_all("tr")
    assert [r.attrs["data-scenario"] for r in rows] == [sd.scenario.name for sd in comparison.scenarios]
    for row, sd in zip(rows, comparison.scenarios):
        assert row.attrs["data-change"] == sd.change
        for check in sd.scenario.checks:
            final = sd.final(check)
            cells = row.find_all("td", data_check=check)
            assert [c.attrs["data-change"] for c in cells] == [final.change] * 3
            assert [c.text() for c in cells] == [final.baseline, final.candidate, final.change]
            assert f"c-{final.change}" in cells[2].classes
        link = row.find("a")
        target = link.attrs["href"]
        assert target.startswith("#")
        section = dom(comparison).find("section", id=target[1:])
        assert section.attrs["data-scenario"] == sd.scenario.name


def test_regression_header_says_the_gate_fails_and_why(comparisons):
    comparison = comparisons["regression"]
    command = ["harness", "diff", "--baseline", "reference", "--candidate", "<b>reference:drop</b>"]
    doc = dom(comparison, command)
    assert comparison.counts()["regression"] == 2
    gate = doc.find(id="gate")
    assert gate.attrs["data-gate"] == "fails" and gate.text() == "gate fails"
    assert [li.text() for li in doc.find(id="gate-failures").find_all("li")] == comparison.gate_failures()
    counts = {li.attrs["data-change"]: int(li.attrs["data-count"]) for li in doc.find(id="counts").find_all("li")}
    assert counts == comparison.counts()
    assert doc.find(id="baseline-target").find("code").text() == "reference"
    assert doc.find(id="candidate-target").find("code").text() == "reference:drop-append-on-resume"
    assert doc.find("pre", id="command").text() == "harness diff --baseline reference --candidate '<b>reference:drop</b>'"
    assert not doc.find_all("b")


def test_fix_passes_the_gate_and_shows_the_baseline_side(comparisons):
    comparison = comparisons["fix"]
    doc = dom(comparison)
    assert comparison.counts()["fix"] == 2 and not comparison.gate_failures()
    assert doc.find(id="gate").attrs["data-gate"] == "passes"
    assert not doc.find_all(id="gate-failures")
    views = doc.find_all("section", cls="diff-view")
    assert {(v.attrs["data-check"], v.attrs["data-side"]) for v in views} == {
        ("appended_exactly_once", "baseline"), ("prefix_stable", "baseline")}
    assert not doc.find_all(id="command")


# --------------------------------------------------------------------------- per scenario


def test_a_run_that_crashed_is_an_error_with_its_steps_and_reason(comparisons):
    comparison = comparisons["error"]  # the candidate crashes at its first resume (exit 3)
    sd = comparison.scenarios[0]
    assert sd.candidate.status == "error" and comparison.counts()["error"] == 4
    doc = dom(comparison)
    assert doc.find(id="gate").attrs["data-gate"] == "fails"
    assert all(li.text().startswith("error: three-steps") for li in doc.find(id="gate-failures").find_all("li"))
    row = doc.find("table", id="matrix").find("tr", data_scenario="three-steps")
    assert {td.attrs["data-change"] for td in row.find_all("td", cls="change")} == {"error"}
    assert all("c-error" in td.classes for td in row.find_all("td", cls="change"))
    timeline = doc.find("table", cls="timeline", data_side="candidate")
    rows = timeline.find("tbody").find_all("tr")
    assert [r.attrs["data-step"] for r in rows] == ["1", "2", "3"]
    crashed = sd.candidate.steps[1]
    assert crashed.error and rows[1].find("td", cls="exit").text() == "3"
    assert rows[1].find("td", cls="err").text() == crashed.error
    assert rows[2].text().endswith("not run")
    assert doc.find("pre", cls="run-error").text() == sd.candidate.error
    cells = doc.find("table", cls="step-cells").find("tr", data_check="identity_stable")
    assert [td.attrs["data-change"] for td in cells.find_all("td") if "data-step" in td.attrs] == \
        ["unchanged-pass", "error", "error"]
    assert not doc.find_all("section", cls="diff-view")  # an error is not judged: no request to point at



def test_timelines_list_every_step_of_both_runs(comparisons):
    comparison = comparisons["timestamp"]
    doc = dom(comparison)
    for sd in comparison.scenarios:
        section = doc.find("section", cls="scenario", data_scenario=sd.scenario.name)
        for side in ("baseline", "candidate"):
            table = section.find("table", cls="timeline", data_side=side)
            rows = table.find("tbody").find_all("tr")
            result = getattr(sd, side)
            assert len(rows) == len(sd.scenario.steps) == len(result.steps)
            for row, step in zip(rows, result.steps):
                cells = [c.text() for c in row.find_all("td")]
                assert cells[:3] == [str(step.index), step.kind, str(step.exit_code)]
                assert cells[3] == f"{step.duration_s:.2f}s" and cells[4] == str(step.requests)
                assert cells[5] == ", ".join(f"{n} {k}" for k, n in step.classes.items())
                assert cells[6] == step.session_id


def test_per_step_cells_show_where_each_check_first_changed(comparisons):
    comparison = comparisons["regression"]
    sd = comparison.scenarios[0]
    table = dom(comparison).find("table", cls="step-cells")
    for check in sd.scenario.checks:
        row = table.find("tr", data_check=check)
        cells = [td for td in row.find_all("td") if "data-step" in td.attrs]
        assert [(int(td.attrs["data-step"]), td.attrs["data-change"]) for td in cells] == \
            [(c.step, c.change) for c in sd.cells if c.check == check]
        first = sd.first_change(check)
        marked = [int(td.attrs["data-step"]) for td in cells if "first-change" in td.classes]
        assert marked == ([first.step] if first else [])
        assert row.attrs["data-first-change"] == (str(first.step) if first else "")
    # drop-append-on-resume loses the text at the retry, step 2
    assert sd.first_change("appended_exactly_once").step == 2
    assert "step 2 (retry): regression" in table.find("tr", data_check="prefix_stable").text()


# --------------------------------------------------------------------------- the side-by-side views


def test_first_diff_mark_sits_at_the_offset_prefix_stable_reports(comparisons):
    comparison = comparisons["timestamp"]
    doc = dom(comparison)
    for index, sd in enumerate(comparison.scenarios):
        result = check_result(comparison, "candidate", "prefix_stable", index)
        offset = result.evidence["offset"]
        first = next(e for e in journal(sd) if e.klass == "main")
        pointed = next(e for e in journal(sd) if e.seq == result.request)
        diff_view = view(doc, "prefix_stable", "candidate", sd.scenario.name)
        assert f"offset {offset}" in diff_view.find("p", cls="diff-summary").text()
        assert diff_view.find("pre", cls="message").text() == result.message
        chars = []
        for role, request in (("left", first), ("right", pointed)):
            panel = diff_view.find("div", cls=role)
            assert panel.attrs["data-request"] == str(request.seq)
            box = panel.find("div", cls="bytes", data_part="system-prefix")
            prefix = system_prefix(request)
            assert box.text().encode("utf-8") == prefix  # every byte, none added
            mark = box.find("mark", cls="first-diff")
            assert mark.attrs["data-offset"] == str(offset)
            assert utf8_len(box.text_before(mark)) == offset
            assert mark.text().encode("utf-8") == prefix[offset:offset + 1]
            chars.append(mark.text())
        assert chars[0] != chars[1] and all(c.isdigit() for c in chars)  # a digit of the timestamp
    # the timestamp moved in both scenarios; nothing else did
    assert {v.attrs["data-check"] for v in doc.find_all("section", cls="diff-view")} == {"prefix_stable"}


def test_a_shorter_prefix_marks_its_end_and_the_other_sides_newline(comparisons):
    comparison = comparisons["regression"]
    result = check_result(comparison, "candidate", "prefix_stable")
    offset = result.evidence["offset"]
    diff_view = view(dom(comparison), "prefix_stable", "candidate")
    left = diff_view.find("div", cls="left").find("mark", cls="first-diff")
    assert left.text() == "\n" and "nl" in left.classes
    right_box = diff_view.find("div", cls="right").find("div", cls="bytes")
    right = right_box.find("mark", cls="first-diff")
    assert right.text() == "" and right.attrs["data-end"] == "true" and "at-end" in right.classes
    assert utf8_len(right_box.text_before(right)) == offset == utf8_len(right_box.text())
    assert f"'\\n' (U+000A) vs end of text; lengths {result.expected} vs {result.observed} bytes" in \
        diff_view.find("p", cls="diff-summary").text()


def test_appended_text_is_marked_and_counted_on_both_sides(comparisons):
    comparison = comparisons["regression"]
    append = comparison.scenarios[0].scenario.append
    diff_view = view(dom(comparison), "appended_exactly_once", "candidate")
    for role, count, label in (("left", 1, "appended text: 1 occurrence"), ("right", 0, "appended text: 0 occurrences")):
        panel = diff_view.find("div", cls=role)
        shown = panel.find("p", cls="appended-count")
        assert shown.attrs["data-count"] == str(count) and shown.text().startswith(label)
        marks = panel.find_all("mark", cls="appended")
        assert [m.text() for m in marks] == [append] * count


def test_identity_flip_is_marked_with_the_first_diff_inside_it(comparisons):
    comparison = comparisons["identity"]
    sd = comparison.scenarios[0]
    result = check_result(comparison, "candidate", "identity_stable")
    context = CheckContext(tuple(journal(sd)), sd.scenario.append, re.compile(comparison.candidate.identity_regex))
    diff_view = view(dom(comparison), "identity_stable", "candidate")
    identities = []
    for role, seq in (("left", context.main_requests[0].seq), ("right", result.request)):
        exchange = next(e for e in journal(sd) if e.seq == seq)
        panel = diff_view.find("div", cls=role)
        (mark,) = panel.find_all("mark", cls="identity")
        assert mark.text() == identity_of(exchange, context)
        first_diff = panel.find("mark", cls="first-diff")
        assert mark in first_diff.ancestors()  # the agent id is where the bytes move
        identities.append(mark.text())
    assert identities == [result.expected, result.observed] and identities[0] != identities[1]


def test_history_failure_shows_its_message_and_requests(comparisons):
    comparison = comparisons["history"]
    result = check_result(comparison, "candidate", "history_preserved")
    assert result.verdict == "fail"
    diff_view = view(dom(comparison), "history_preserved", "candidate")
    assert diff_view.find("pre", cls="message").text() == result.message
    assert diff_view.find("div", cls="right").attrs["data-request"] == str(result.request)


def test_long_prefix_shows_a_window_and_the_full_text_folded(comparisons):
    comparison = comparisons["long"]
    sd = comparison.scenarios[0]
    result = check_result(comparison, "candidate", "prefix_stable")
    offset = result.evidence["offset"]
    pointed = next(e for e in journal(sd) if e.seq == result.request)
    panel = view(dom(comparison), "prefix_stable", "candidate").find("div", cls="right")
    window = panel.find("div", cls="window")
    full = panel.find("details").find("div", cls="bytes")
    assert full.text().encode("utf-8") == system_prefix(pointed)
    assert len(window.text()) <= 601 < len(full.text())
    for box in (window, full):
        mark = box.find("mark", cls="first-diff")
        assert int(box.attrs["data-start-byte"]) + utf8_len(box.text_before(mark)) == offset
        assert mark.attrs["data-offset"] == str(offset)
    assert len(panel.find_all("mark", cls="appended")) == 2  # once in the full text, once (clipped) in the window
    assert panel.find("p", cls="appended-count").text().startswith("appended text: 1 occurrence")


# --------------------------------------------------------------------------- synthetic journals: the rarer shapes


SYNTHETIC = scenario_from_text('name: synthetic\nappend: "APPENDED RULES"\nsteps:\n  - launch: {prompt: "a", reply: "1"}\n'
                           '  - resume: {prompt: "b", reply: "2"}\n')
TARGET = Target("synthetic-agent", {}, SessionIdSource("stdout_json", "session_id"))


def synthetic_view(first_blocks, second_blocks, tools=(None, None)) -> tuple[Node, CheckResult]:
    journal = [exchange(1, 1, first_blocks, [user("a")], tools=tools[0]),
               exchange(2, 2, second_blocks, [user("a"), assistant("1"), user("b")], tools=tools[1])]
    result = run_check(prefix.NAME, CheckContext(tuple(journal), SYNTHETIC.append, TARGET.identity_pattern))
    assert result.verdict == "fail"
    html = diff_view(SYNTHETIC.name, "candidate", TARGET.name, result, "v")
    return Tree(html).root.find("section", cls="diff-view"), result


def test_a_difference_inside_a_multibyte_character_marks_that_character():
    diff_view_, result = synthetic_view(system("You are A.", "Caf\u00e9 \u00e9t\u00e9. APPENDED RULES"),
                                        system("You are A.", "Caf\u00e9 \u00e8t\u00e9. APPENDED RULES"))
    offset = result.evidence["offset"]
    for role, char in (("left", "\u00e9"), ("right", "\u00e8")):
        box = diff_view_.find("div", cls=role).find("div", cls="bytes")
        mark = box.find("mark", cls="first-diff")
        before = utf8_len(box.text_before(mark))
        assert mark.text() == char and before < offset < before + utf8_len(char)  # é and è share their first byte
        assert mark.attrs["data-offset"] == str(offset)


def test_a_carriage_return_is_shown_not_swallowed():
    diff_view_, _ = synthetic_view(system("You are A.", "Rules:\r\nAPPENDED RULES"),
                                        system("You are A.", "Rules:\nAPPENDED RULES"))
    left = diff_view_.find("div", cls="left").find("mark", cls="first-diff")
    assert left.text() == "\\r" and left.find("span", cls="ctl")  # an HTML parser would turn a raw \r into \n
    right = diff_view_.find("div", cls="right").find("mark", cls="first-diff")
    assert right.text() == "\n" and "nl" in right.classes


def test_only_the_tools_differ_so_the_tool_definitions_are_marked():
    tools_a = [{"name": "calc", "description": "adds", "input_schema": {}}]
    tools_b = [{"name": "calc", "description": "adds numbers", "input_schema": {}}]
    blocks = system("You are A.", "APPENDED RULES")
    diff_view_, result = synthetic_view(blocks, blocks, (tools_a, tools_b))
    assert "tool definitions" in result.evidence["part"]
    summaries = [p.text() for p in diff_view_.find_all("p", cls="diff-summary")]
    assert summaries[0] == "cache prefix: byte-identical in both requests (26 bytes)"
    assert summaries[1].startswith(f"tool definitions: first differing byte at offset {result.evidence['offset']}")
    for role, tools in (("left", tools_a), ("right", tools_b)):
        box = diff_view_.find("div", cls=role).find("div", cls="bytes", data_part="tools")
        mark = box.find("mark", cls="first-diff")
        assert utf8_len(box.text_before(mark)) == result.evidence["offset"]
        assert box.text() == json.dumps(tools, sort_keys=True, separators=(",", ":"))


def test_blocks_outside_the_cache_key_are_shown_apart_and_still_counted():
    billing = {"text": "x-anthropic-billing-header: cc_version=1; APPENDED RULES", "cache_control": None, "cache_key": False}
    diff_view_, _ = synthetic_view([billing, *system("You are A.", "Body 1")], [billing, *system("You are A.", "Body 2")])
    left = diff_view_.find("div", cls="left")
    assert "system block 0: metadata, outside the cache key" in left.text()
    assert left.find("div", cls="bytes", data_part="system-prefix").text() == "You are A.\n\nBody 1"
    outside = left.find("div", cls="bytes", data_part="system-block-0")
    assert [m.text() for m in outside.find_all("mark", cls="appended")] == ["APPENDED RULES"]
    assert left.find("p", cls="appended-count").text() == "appended text: 1 occurrence (0 in the cache prefix)"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.sampled_from(["identity", "appended", "first-diff"])),
                max_size=6))
def test_marks_never_add_or_drop_a_character(text, raw_spans):
    spans = [Span(min(a, b, len(text)), min(max(a, b), len(text)), cls) for a, b, cls in raw_spans]
    root = Tree(f"<div>{marked(text, spans)}</div>").root  # Tree asserts every </mark> closes an open <mark>
    assert root.text() == text
    for cls in ("identity", "appended", "first-diff"):
        covered = "".join(m.text() for m in root.find_all("mark", cls=cls) if not any(
            cls in a.classes for a in m.ancestors()))
        assert len(covered) == len(set().union(*[range(s.start, s.end) for s in spans if s.cls == cls]))


# --------------------------------------------------------------------------- safety


def test_agent_and_scenario_text_is_escaped(comparisons):
    comparison = comparisons["hostile"]
    html = render_comparison(comparison, ["harness", "diff", "</pre><script>alert(6)</script>"])
    tree = Tree(html)
    tags = {tag for tag, _ in tree.tags}
    assert not tags & {"script", "img", "iframe", "object", "embed", "textarea", "b"}
    assert not re.search(r"<\s*(script|img)", html, re.IGNORECASE)
    assert not [(tag, a) for tag, attrs in tree.tags for a in attrs if a.startswith("on")]  # no event handler attribute
    append = comparison.scenarios[0].scenario.append
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "alert('description')</script>\\x07<b>bell</b>" in tree.root.text()  # a control character, shown
    text = tree.root.text()
    for literal in ("<script>alert(1)</script>", "<img src=x onerror=alert(3)>", "</textarea><script>alert(5)</script>",
                    "</style><script>alert('description')</script>", "</pre><script>alert(6)</script>"):
        assert literal in text
    # the appended text dropped at the resume: marked, as text, on the left of the candidate's view
    left = view(tree.root, "appended_exactly_once", "candidate").find("div", cls="left")
    assert [m.text() for m in left.find_all("mark", cls="appended")] == [append]


def test_names_are_escaped_in_attributes_too(comparisons):
    """Scenario files restrict names, but a Comparison built in code (or a target file's name) may carry anything."""
    original = comparisons["regression"]
    name = 'x" onmouseover="alert(1)" data-x=\'<script>'
    sd = dataclasses.replace(original.scenarios[0], scenario=dataclasses.replace(original.scenarios[0].scenario, name=name))
    comparison = dataclasses.replace(original, scenarios=[sd],
                                     candidate=dataclasses.replace(original.candidate, name="<i>candidate</i>"))
    tree = Tree(render_comparison(comparison))
    assert not [(tag, a) for tag, attrs in tree.tags for a in attrs if a.startswith("on")]
    assert not {"script", "i"} & {tag for tag, _ in tree.tags}
    assert tree.root.find("table", id="matrix").find("tr", data_scenario=name)
    assert {v.attrs["data-scenario"] for v in tree.root.find_all("section", cls="diff-view")} == {name}
    assert tree.root.find(id="candidate-target").find("code").text() == "<i>candidate</i>"


def test_no_external_resources(comparisons):
    for name in ("regression", "timestamp", "hostile"):
        html = render_comparison(comparisons[name], ["harness", "diff"])
        tree = Tree(html)
        for tag, attrs in tree.tags:
            assert tag not in {"script", "link", "img", "iframe", "object", "embed", "base", "audio", "video", "source"}, tag
            for name_, value in attrs.items():
                if name_ in {"src", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href"}:
                    raise AssertionError(f"<{tag} {name_}={value!r}>")
                if name_ == "href":
                    assert value.startswith("#"), value
        style = "".join(n.text() for n in tree.root.find_all("style"))
        assert "url(" not in style and "@import" not in style and "@font-face" not in style
        csp = tree.root.find("meta", http_equiv="Content-Security-Policy").attrs["content"]
        assert "default-src 'none'" in csp


def test_write_comparison_writes_one_file(comparisons, tmp_path):
    path = write_comparison(comparisons["fix"], tmp_path / "out" / "report.html", ["harness", "diff"])
    assert path == tmp_path / "out" / "report.html"
    assert path.read_text(encoding="utf-8") == render_comparison(comparisons["fix"], ["harness", "diff"])
    assert list(path.parent.iterdir()) == [path]


# --------------------------------------------------------------------------- in a real browser


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def _png_distinct_bytes(data: bytes) -> int:
    """How varied the decoded pixel rows are: a blank page gives a handful of byte values."""
    idat, position = b"", 8
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        if kind == b"IDAT":
            idat += data[position + 8:position + 8 + length]
        position += 12 + length
    return len(set(zlib.decompress(idat)))


def test_report_in_headless_chromium_offline(comparisons, tmp_path, monkeypatch):
    from selenium.webdriver.common.by import By

    started = time.monotonic()
    comparison = comparisons["timestamp"]
    result = check_result(comparison, "candidate", "prefix_stable")
    report = write_comparison(comparison, tmp_path / "report.html", ["harness", "diff"])
    with offline_page(report, tmp_path, monkeypatch) as driver:
        assert driver.execute_script(  # nothing that could load: no script, link, src, off-page href or sheet by URL
            "return [...document.querySelectorAll('script, link, iframe, object, embed, [src], [srcset], "
            "[href]:not([href^=\"#\"])')].length + [...document.styleSheets].filter(s => s.href).length") == 0
        assert driver.title == "harness diff: reference → reference:timestamp-in-prefix"

        matrix = driver.find_element(By.ID, "matrix")
        assert matrix.is_displayed()
        assert len(matrix.find_elements(By.CSS_SELECTOR, "tbody tr")) == len(comparison.scenarios) == 2
        regression = matrix.find_element(By.CSS_SELECTOR, 'td.change[data-change="regression"]')
        unchanged = matrix.find_element(By.CSS_SELECTOR, 'td.change[data-change="unchanged-pass"]')
        assert regression.is_displayed() and unchanged.is_displayed()
        assert regression.value_of_css_property("background-color") != unchanged.value_of_css_property("background-color")

        view_css = '.diff-view[data-check="prefix_stable"][data-side="candidate"]'
        diff_view = driver.find_elements(By.CSS_SELECTOR, view_css)[0]
        mark = diff_view.find_element(By.CSS_SELECTOR, ".side.right mark.first-diff")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", mark)
        assert mark.is_displayed()
        assert mark.size["width"] > 0 and mark.size["height"] > 0
        background = mark.value_of_css_property("background-color")
        assert background not in ("transparent", "rgba(0, 0, 0, 0)")
        assert mark.value_of_css_property("outline-style") != "none"
        assert mark.get_attribute("data-offset") == str(result.evidence["offset"])
        before, start, marked = driver.execute_script(
            "const m = arguments[0], box = m.closest('.bytes'), r = document.createRange();"
            "r.setStart(box, 0); r.setEndBefore(m);"
            "return [new TextEncoder().encode(r.toString()).length, Number(box.dataset.startByte), m.textContent];", mark)
        assert start + before == result.evidence["offset"]
        pointed = next(e for e in journal(comparison.scenarios[0]) if e.seq == result.request)
        assert marked.encode("utf-8") == system_prefix(pointed)[before:before + 1]

        screenshot = tmp_path / "report.png"
        assert driver.save_screenshot(str(screenshot))
        data = screenshot.read_bytes()
        width, height = _png_size(data)
        assert width >= 800 and height >= 600 and len(data) > 20_000
        assert _png_distinct_bytes(data) > 50
    assert time.monotonic() - started < 20
