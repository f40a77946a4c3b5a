"""report.html of `harness run`: built from real runs of the reference agent, its defects and broken agents, read two ways.

The unit tests parse the HTML with the standard library and hold it to the
RunResults it renders: each matrix cell is its run's verdict for that check,
each run's timeline its steps, each failing check has the two requests it
compared with the first differing byte marked at the offset the journal's
bytes put it, an error or cannot-express run never reads as a pass, and an
interrupted command says so first. The CLI tests run the real `harness`
command; the browser test opens the page in Debian's headless Chromium with
the network off and uses the filter a reviewer of 500 runs would use.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_html_report import (
    AGENTS, HOSTILE, RETRY, THREE_STEPS, Node, Tree, _png_distinct_bytes, _png_size,
)
from offline_browser import offline_page
from test_interrupt import SCENARIO as STOPPABLE
from test_interrupt import wait_for
from vocabulary import as_foreground

from harness.checks.prefix import system_prefix
from harness.journal.requests import read_journal
from harness.report.files import ReportWriteError
from harness.report.html_page import CSP
from harness.report.html_run import family_of, render_run, write_run
from harness.report.wording import check_columns, counts
from harness.results import FAIL, RunResult
from harness.run.runner import run_matrix
from harness.scenario.reader import load_scenarios, scenario_from_text
from harness.targets import resolve_target

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(sys.executable).with_name("harness")
TEMPORARY = ROOT / "scenarios" / "temporary-text-for-one-step.yaml"
DEFECTS = ("reference", "reference:drop-append-on-resume", "reference:fresh-identity-per-process")


class Runs:
    """Real runs, each set made on first use, so an xdist worker runs only what its tests read."""

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.made: dict[str, list[RunResult]] = {}

    def __getitem__(self, name: str) -> list[RunResult]:
        if name not in self.made:
            self.made[name] = getattr(self, f"_{name}")(self.tmp_path_factory.mktemp(name))
        return self.made[name]

    @staticmethod
    def _matrix(tmp: Path) -> list[RunResult]:
        """Two scenario folders × three targets: passes, expected failures (RETRY's expect:) and unexpected ones."""
        (tmp / "suite" / "more").mkdir(parents=True)
        shutil.copy(RETRY, tmp / "suite" / RETRY.name)
        (tmp / "suite" / "more" / "three-steps.yaml").write_text(THREE_STEPS)
        scenarios = load_scenarios([tmp / "suite" / RETRY.name, tmp / "suite" / "more" / "three-steps.yaml"])
        return run_matrix(scenarios, [resolve_target(t)[0] for t in DEFECTS], tmp / "journal")

    @staticmethod
    def _broken(tmp: Path) -> list[RunResult]:
        """An agent that crashes at its first resume (error), and a scenario a target cannot express."""
        crashed = run_matrix([scenario_from_text(THREE_STEPS)], [resolve_target(str(AGENTS / "crash.yaml"))[0]], tmp)
        cannot = run_matrix(load_scenarios([TEMPORARY]), [resolve_target(str(AGENTS / "good.yaml"))[0]], tmp)
        return crashed + cannot

    @staticmethod
    def _hostile(tmp: Path) -> list[RunResult]:
        return run_matrix([scenario_from_text(HOSTILE)], [resolve_target(DEFECTS[1])[0]], tmp)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory)


def dom(results: list[RunResult], command=None, notes=()) -> Node:
    return Tree(render_run(results, command, notes)).root


def row_of(doc: Node, number: int) -> Node:
    return doc.find("table", id="matrix").find("tr", data_run=str(number))


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


# --------------------------------------------------------------------------- the matrix


def test_matrix_cells_are_each_runs_verdicts(runs):
    results = runs["matrix"]
    assert {r.status for r in results} == {"pass", "fail"}
    assert {(c.verdict, c.as_expected) for r in results for c in r.checks} >= {("pass", True), ("fail", True), ("fail", False)}
    doc = dom(results)
    matrix = doc.find("table", id="matrix")
    columns = check_columns(results)
    assert [th.attrs["data-check"] for th in matrix.find("thead").find_all("th", cls="check")] == columns
    assert len(matrix.find_all("tr", cls="run")) == len(results)
    for number, result in enumerate(results, 1):
        row = row_of(doc, number)
        assert (row.attrs["data-scenario"], row.attrs["data-target"], row.attrs["data-status"]) == \
            (result.scenario, result.target, result.status)
        assert row.attrs["data-as-expected"] == ("yes" if result.as_expected else "no")
        assert row.parent.attrs["data-family"] == row.attrs["data-family"] == "reference"
        cells = [td for td in row.find_all("td") if "v" in td.classes or "absent" in td.classes]
        assert len(cells) == len(columns)
        for name, cell in zip(columns, cells):
            check = next((c for c in result.checks if c.check == name), None)
            if check is None:
                assert "absent" in cell.classes and cell.text() == "-"
                continue
            assert cell.attrs["data-check"] == name
            assert (cell.attrs["data-verdict"], cell.attrs["data-expected-verdict"]) == (check.verdict, check.expected_verdict)
            assert cell.text() == check.verdict + ("" if check.as_expected else "!")
            assert ("unexpected" in cell.classes) == (not check.as_expected)
        assert row.find("td", cls="status").text() == result.status
        assert row.find("td", cls="expected").text() == ("yes" if result.as_expected else "NO")
        assert row.find("td", cls="scenario").find("a").attrs["href"] == f"#run-{number}"
        assert doc.find("section", cls="run", id=f"run-{number}").attrs["data-target"] == result.target


def test_header_overview_and_groups_count_the_runs(runs):
    results = runs["matrix"] + runs["broken"]
    doc = dom(results, ["harness", "run", "<b>x</b>"], ["no --target given: these runs judge the reference agent"])
    total = counts(results)
    assert {li.attrs["data-count-of"]: int(li.attrs["data-count"]) for li in doc.find(id="counts").find_all("li")} == \
        {k: total[k] for k in ("runs", "as_expected", "unexpected", "errors", "flaky", "cannot_express", "pass", "fail")}
    assert doc.find(id="verdict").attrs["data-verdict"] == "differs"
    assert doc.find("pre", id="command").text() == "harness run '<b>x</b>'"
    assert doc.find("p", cls="note").text() == "Note: no --target given: these runs judge the reference agent"
    assert not doc.find_all(id="interrupted")
    families = [tb.attrs["data-family"] for tb in doc.find("table", id="matrix").find_all("tbody")]
    assert families == ["reference", "runner-crash", "runner-good"]
    for row in doc.find(id="families").find("tbody").find_all("tr"):
        group = [r for r in results if family_of(r.target) == row.attrs["data-group"]]
        cells = {td.attrs["data-count-of"]: int(td.text()) for td in row.find_all("td") if "data-count-of" in td.attrs}
        assert cells == {k: counts(group)[k] for k in cells} and cells["runs"] == len(group)
    assert row_of(doc, len(results) - 1).find("td", cls="scenario").text() == "three-steps"  # a scenario with no file
    doc = dom(runs["matrix"])
    folders = {row.attrs["data-group"]: int(row.find("td", data_count_of="runs").text())
               for row in doc.find(id="folders").find("tbody").find_all("tr")}
    assert folders == {"suite": 3, "suite/more": 3}
    assert [row_of(doc, n).find("span", cls="folder").text() for n in (1, 4)] == ["suite/", "suite/more/"]


def test_target_families_are_the_names_harness_targets_lists():
    assert [family_of(resolve_target(spec)[0].name) for spec in DEFECTS] == ["reference"] * 3
    assert family_of("claude-code@2.1.332+append-never") == "claude-code"
    assert family_of("inspect-swe@0.2.72+claude-code@2.1.332+pin") == "inspect-swe"
    assert family_of("pydantic-ai:examples/agent.py:persisted_agent+openai-chat") == "pydantic-ai"
    assert family_of("code-puppy@0.0.946+anthropic+memory") == "code-puppy"


def test_the_filters_are_css_checkboxes_before_everything_they_hide(runs):
    html = render_run(runs["matrix"])
    body = Tree(html).root.find("body")
    order = [(c.tag, c.attrs.get("id", "")) for c in body.children if isinstance(c, Node)]
    boxes = [order.index(("input", name)) for name in ("only-unexpected", "only-failing")]
    first_hidden = min(order.index(("section", "verdicts")), *(i for i, (tag, id_) in enumerate(order) if id_.startswith("run-")))
    assert max(boxes) < first_hidden  # a sibling selector reaches only what follows the box
    for box, attribute in (("only-unexpected", '[data-as-expected="yes"]'), ("only-failing", '[data-status="pass"]')):
        assert f"#{box}:checked ~ #verdicts tr.run{attribute}" in html
        assert f"#{box}:checked ~ section.run{attribute}" in html


# --------------------------------------------------------------------------- a run's steps and evidence


def test_each_run_lists_its_steps(runs):
    results = runs["matrix"] + runs["broken"][:1]
    doc = dom(results)
    for number, result in enumerate(results, 1):
        rows = doc.find("section", id=f"run-{number}").find("table", cls="timeline").find("tbody").find_all("tr")
        assert [r.attrs["data-step"] for r in rows] == [str(s.index) for s in result.steps]
        for row, step in zip(rows, result.steps):
            cells = [c.text() for c in row.find_all("td")]
            assert cells[:5] == [str(step.index), step.kind, str(step.exit_code), f"{step.duration_s:.2f}s", str(step.requests)]
            assert cells[5] == (", ".join(f"{n} {k}" for k, n in step.classes.items()) or "none")
            assert cells[6] == (step.session_id or "") and cells[8] == "".join(step.notes) and cells[9] == (step.error or "")


def test_every_failing_check_shows_its_requests_with_the_first_differing_byte_marked(runs):
    results = runs["matrix"]
    doc = dom(results)
    failing = [(n, r, c) for n, r in enumerate(results, 1) for c in r.checks if c.verdict == FAIL]
    assert {c.check for _, _, c in failing} == {"identity_stable", "appended_exactly_once", "prefix_stable"}
    for number, result, check in failing:
        evidence = doc.find(id=f"run-{number}-{check.check}")
        assert row_of(doc, number).find("td", data_check=check.check).find("a").attrs["href"] == f"#{evidence.attrs['id']}"
        assert evidence.tag == ("details" if check.as_expected else "div")  # expected failures folded
        view = evidence.find("section", cls="diff-view")
        assert (view.attrs["data-check"], view.attrs["data-verdict"]) == (check.check, "fail")
        assert view.find("pre", cls="message").text() == check.message
        journal = read_journal(Path(result.journal))
        first = next(e for e in journal if e.klass == "main")
        pointed = next(e for e in journal if e.seq == check.request)
        left, right = system_prefix(first), system_prefix(pointed)
        offset = next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
        if check.check == "prefix_stable":
            assert check.evidence["offset"] == offset  # the check's own number, and the journal's bytes agree
        for role, exchange, prefix in (("left", first, left), ("right", pointed, right)):
            panel = view.find("div", cls=role)
            assert panel.attrs["data-request"] == str(exchange.seq)
            box = panel.find("div", cls="bytes", data_part="system-prefix")
            assert box.text().encode("utf-8") == prefix  # every byte, none added
            mark = box.find("mark", cls="first-diff")
            assert mark.attrs["data-offset"] == str(offset) and utf8_len(box.text_before(mark)) == offset
            assert mark.text().encode("utf-8") == prefix[offset:offset + 1]
    assert len(doc.find_all("section", cls="diff-view")) == len(failing)


def test_an_error_run_and_a_cannot_express_run_never_read_as_a_pass(runs):
    results = runs["broken"]
    crashed, cannot = results
    assert (crashed.status, cannot.status) == ("error", "cannot-express") and cannot.cannot_express
    doc = dom(results)
    for number, result, status, verdict, expected in ((1, crashed, "error", "error!", "NO"),
                                                      (2, cannot, "cannot express", "cannot-express", "not run")):
        row = row_of(doc, number)
        assert row.find("td", cls="status").text() == status and row.find("td", cls="expected").text() == expected
        assert {td.text() for td in row.find_all("td", cls="v")} == {verdict}
        assert "pass" not in row.text().replace("cannot-express", "") and not row.find_all(cls="v-pass")
        section = doc.find("section", id=f"run-{number}")
        assert "pass" not in section.find("h2").text() and not section.find_all(cls="status-pass")
    section = doc.find("section", id="run-1")
    assert section.find("pre", cls="run-error").text() == crashed.error
    rows = section.find("table", cls="timeline").find("tbody").find_all("tr")
    assert rows[1].find("td", cls="exit").text() == "3" and rows[1].find("td", cls="err").text() == crashed.steps[1].error
    assert not section.find_all("section", cls="diff-view")  # an error is not judged: nothing to compare
    reason = doc.find("section", id="run-2").find("p", cls="cannot-express").text()
    assert reason.endswith(f"cannot express this scenario: {cannot.cannot_express}")
    assert doc.find("section", id="run-2").find("p", cls="no-steps")


def test_an_interrupted_run_says_so_in_the_header(tmp_path):
    """`harness run` stopped by Ctrl-C during the second scenario's resume: the page it writes on the way out."""
    (tmp_path / "a.yaml").write_text(STOPPABLE.format(name="a-done", more=""))
    (tmp_path / "b.yaml").write_text(STOPPABLE.format(name="b-stopped", more="  - resume: {prompt: b, reply: B}\n"))
    (tmp_path / "c.yaml").write_text(STOPPABLE.format(name="c-never", more=""))
    scratch, out = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    proc = subprocess.Popen(
        [str(HARNESS), "run", "a.yaml", "b.yaml", "c.yaml", "--target", str(AGENTS / "hang-on-resume.yaml"),
         "--report-dir", str(out), "--keep-workspace"], cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_foreground)
    try:
        wait_for("harness-b-stopped*/home/pids.json", scratch)  # the resume is hanging now
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    doc = Tree((out / "report.html").read_text(encoding="utf-8")).root
    assert doc.find("title").text() == "harness run: 3 runs (interrupted)"
    header = doc.find("header")
    banner = header.find(id="interrupted")
    assert banner.text().startswith("INTERRUPTED: 2 of 3 runs incomplete or not run") and banner.attrs["data-count"] == "2"
    assert header.children.index(banner) < header.children.index(header.find(id="verdict"))  # said before anything else
    statuses = [row.find("td", cls="status").text() for row in doc.find("table", id="matrix").find_all("tr", cls="run")]
    assert statuses == ["pass", "error · interrupted", "error · interrupted"]
    assert len(doc.find_all("p", cls="interrupted-run")) == 2


# --------------------------------------------------------------------------- safety and the file


def test_agent_and_scenario_text_is_escaped(runs):
    (run,) = runs["hostile"]
    hostile = dataclasses.replace(run, target='<i>t</i>" onmouseover="alert(7)', error="</pre><script>alert(8)</script>",
                                  scenario='x" onclick="alert(9)" data-x=\'<script>')
    html = render_run([run, hostile], ["harness", "run", "</pre><script>alert(6)</script>"], ["<img src=x onerror=alert(10)>"])
    tree = Tree(html)
    assert not {tag for tag, _ in tree.tags} & {"script", "img", "iframe", "object", "embed", "textarea", "i", "b"}
    assert not re.search(r"<\s*(script|img)", html, re.IGNORECASE)
    assert not [(tag, a) for tag, attrs in tree.tags for a in attrs if a.startswith("on")]
    text = tree.root.text()
    for literal in ("<script>alert(1)</script>", "</pre><script>alert(6)</script>", "</pre><script>alert(8)</script>",
                    "<img src=x onerror=alert(10)>", "<i>t</i>\" onmouseover=\"alert(7)"):
        assert literal in text
    assert row_of(tree.root, 2).attrs["data-scenario"] == hostile.scenario
    left = tree.root.find(id="run-1-appended_exactly_once").find("div", cls="left")  # dropped at the resume
    assert [m.text() for m in left.find_all("mark", cls="appended")] == [scenario_from_text(HOSTILE).append]


def test_the_page_loads_nothing(runs):
    tree = Tree(render_run(runs["matrix"] + runs["broken"] + runs["hostile"], ["harness", "run"]))
    for tag, attrs in tree.tags:
        assert tag not in {"script", "link", "img", "iframe", "object", "embed", "base", "audio", "video", "source"}, tag
        for name, value in attrs.items():
            assert name not in {"src", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href"}
            if name == "href":
                assert value.startswith("#") and tree.root.find_all(id=value[1:]), value  # every link lands on the page
    style = "".join(n.text() for n in tree.root.find_all("style"))
    assert "url(" not in style and "@import" not in style and "@font-face" not in style
    assert tree.root.find("meta", http_equiv="Content-Security-Policy").attrs["content"] == CSP
    assert "default-src 'none'" in CSP and "script-src 'none'" in CSP


def test_the_file_is_written_whole(runs, tmp_path):
    results = runs["matrix"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("an older report")
    path = write_run(results, out / "report.html", ["harness", "run"])
    text = path.read_text(encoding="utf-8")
    assert text == render_run(results, ["harness", "run"]) and text.endswith("</body>\n</html>\n")
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]
    (tmp_path / "taken" / "report.html").mkdir(parents=True)  # a write that fails leaves nothing half-written
    with pytest.raises(ReportWriteError, match="cannot write .*report.html"):
        write_run(results, tmp_path / "taken" / "report.html")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["report.html"]


# --------------------------------------------------------------------------- the command line


def test_harness_run_writes_report_html_beside_results_json(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([str(HARNESS), "run", str(RETRY), "--target", "reference", "--target", DEFECTS[1],
                           "--report-dir", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {"results.json", "summary.md", "junit.xml", "report.html"} <= {p.name for p in out.iterdir()}
    assert f"{out / 'junit.xml'}, {out / 'report.html'}, {out / 'journal'}/" in proc.stdout
    document = json.loads((out / "results.json").read_text())
    doc = Tree((out / "report.html").read_text(encoding="utf-8")).root
    rows = doc.find("table", id="matrix").find_all("tr", cls="run")
    assert [(r.attrs["data-target"], r.attrs["data-status"]) for r in rows] == \
        [(run["target"], run["status"]) for run in document["runs"]] == [("reference", "pass"), (DEFECTS[1], "fail")]
    for row, run in zip(rows, document["runs"]):
        assert {td.attrs["data-check"]: td.attrs["data-verdict"] for td in row.find_all("td", cls="v")} == \
            {c["check"]: c["verdict"] for c in run["checks"]}
    assert len(doc.find_all("section", cls="diff-view")) == 2  # drop-append fails two checks, as RETRY expects
    assert "--report-dir" in doc.find("pre", id="command").text()


def test_the_html_reporter_alone_writes_only_report_html(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([str(HARNESS), "run", str(RETRY), "--reporter", "html", "--report-dir", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")] == ["report.html"]
    assert proc.stdout == ""


# --------------------------------------------------------------------------- in a real browser


def test_run_report_in_headless_chromium_offline(runs, tmp_path, monkeypatch):
    from selenium.webdriver.common.by import By

    started = time.monotonic()
    results = runs["matrix"] + runs["broken"]
    number, check = next((n, c) for n, r in enumerate(results, 1) for c in r.checks
                         if c.check == "prefix_stable" and c.verdict == FAIL and not c.as_expected)
    report = write_run(results, tmp_path / "report.html", ["harness", "run"])
    with offline_page(report, tmp_path, monkeypatch) as driver:
        assert driver.title == f"harness run: {len(results)} runs"

        def shown(css: str) -> list[str]:
            return [e.get_attribute("id") for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]

        every = [f"row-{n}" for n in range(1, len(results) + 1)]
        unexpected = [f"row-{n}" for n, r in enumerate(results, 1) if not r.as_expected]
        failing = [f"row-{n}" for n, r in enumerate(results, 1) if r.status != "pass"]
        assert shown("#matrix tr.run") == every and len(shown("section.run")) == len(results)
        colour = {name: driver.find_element(By.CSS_SELECTOR, css).value_of_css_property("background-color") for name, css in
                  (("pass", "#matrix td.v-pass"), ("expected fail", "#matrix td.v-fail:not(.unexpected)"),
                   ("unexpected", "#matrix td.v-fail.unexpected"), ("error", "#matrix td.v-error"),
                   ("cannot", "#matrix td.v-cannot-express"))}
        assert len(set(colour.values())) == 5, colour  # each kind of verdict reads apart at a glance
        driver.find_element(By.CSS_SELECTOR, 'label[for="only-unexpected"]').click()
        assert shown("#matrix tr.run") == unexpected and len(shown("section.run")) == len(unexpected) < len(results)
        assert shown("#matrix tbody.family") == ["family-1", "family-2"]  # runner-good's one run is as expected
        driver.find_element(By.CSS_SELECTOR, 'label[for="only-unexpected"]').click()
        driver.find_element(By.CSS_SELECTOR, 'label[for="only-failing"]').click()
        assert shown("#matrix tr.run") == failing != every
        driver.find_element(By.CSS_SELECTOR, 'label[for="only-failing"]').click()
        assert shown("#matrix tr.run") == every

        driver.find_element(By.CSS_SELECTOR, f'#row-{number} td[data-check="prefix_stable"] a').click()
        mark = driver.find_element(By.CSS_SELECTOR, f"#run-{number}-prefix_stable .side.right mark.first-diff")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", mark)
        assert mark.is_displayed() and mark.size["width"] > 0 and mark.size["height"] > 0
        assert mark.value_of_css_property("background-color") not in ("transparent", "rgba(0, 0, 0, 0)")
        assert mark.value_of_css_property("outline-style") != "none"
        assert mark.get_attribute("data-offset") == str(check.evidence["offset"])
        before, start = driver.execute_script(
            "const m = arguments[0], box = m.closest('.bytes'), r = document.createRange();"
            "r.setStart(box, 0); r.setEndBefore(m);"
            "return [new TextEncoder().encode(r.toString()).length, Number(box.dataset.startByte)];", mark)
        assert start + before == check.evidence["offset"]

        screenshot = tmp_path / "report.png"
        assert driver.save_screenshot(str(screenshot))
        data = screenshot.read_bytes()
        width, height = _png_size(data)
        assert width >= 800 and height >= 600 and len(data) > 20_000 and _png_distinct_bytes(data) > 50
    assert time.monotonic() - started < 20
