"""report.html for `harness run`: every run of the matrix on one self-contained page, with the bytes behind each failure.

A run of hundreds of scenario × target pairs is read for the few that differ
from their expectation, so the verdict matrix groups its rows by target family
(a target's name up to its first ':', '@' or '+', as `harness targets` spells
them), an overview counts each family and each scenario folder, and two CSS
checkboxes hide every run as expected or every passing one, in the matrix and
in the run sections below it alike. Each failing verdict links to the two
requests it compared, drawn by html_diffview as `harness diff` draws them;
expected failures are folded, so the page opens on what is new.

Everything shown is the RunResults' own (statuses, verdicts and their
expectations, the request pair each failing check put on its verdict): a
report renders evidence and judges nothing again. A run that errored, or that
its target cannot express, reads as such and never as a pass; an interrupted
command says so before anything else. The page rules (nothing loaded, every
text escaped) are html_page's and html_text's.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Callable, Sequence

from harness.report import caller_text, files
from harness.report.html_attempts import ATTEMPTS_CSS, attempts_block
from harness.report.html_diffview import diff_view
from harness.report.html_page import TIMELINE_HEAD, document, step_cells
from harness.report.html_style import CSS
from harness.report.html_text import attr, esc
from harness.report.wording import check_columns, counts, outcome
from harness.results import CANNOT_EXPRESS, FAIL, CheckResult, RunResult

RUN_CSS = """
.interrupted { background: var(--error); color: var(--error-fg); font-weight: 700; padding: .4em .8em; border-radius: 4px; }
.note { border-left: 4px solid var(--line); padding-left: .6em; }
table.overview td.bad { background: var(--regression); color: var(--regression-fg); font-weight: 600; }
#matrix thead th { position: sticky; top: 0; z-index: 1; }
#matrix th.check { font-size: .85em; max-width: 9em; }
#matrix tr.group-head th { background: #e4e9f1; }
#matrix td.scenario .folder { color: var(--muted); font-size: .85em; margin-right: .2em; }
td.v-fail, .status-fail { background: var(--unchanged-fail); color: var(--unchanged-fail-fg); }
td.unexpected, td.expected-no { background: var(--regression); color: var(--regression-fg); font-weight: 700; }
td.v-error, .status-error { background: var(--error); color: var(--error-fg); font-weight: 700; }
td.v-cannot-express, .status-cannot-express { background: #dfe4ee; color: #2b3a55; font-style: italic; }
.status-pass { color: var(--fix-fg); } td.absent { color: var(--muted); }
section.run { border-top: 2px solid var(--line); margin-top: 1.6em; content-visibility: auto; contain-intrinsic-size: auto 900px; }
section.run h2 { border: 0; margin-top: .6em; }
.cannot-express, .interrupted-run { font-weight: 600; color: #2b3a55; }
details.evidence > summary { margin: .6em 0; }
#only-unexpected:checked ~ #verdicts tr.run[data-as-expected="yes"],
#only-unexpected:checked ~ section.run[data-as-expected="yes"],
#only-failing:checked ~ #verdicts tr.run[data-status="pass"],
#only-failing:checked ~ section.run[data-status="pass"] { display: none; }
#only-unexpected:checked ~ #verdicts tbody.family:not(:has(tr.run[data-as-expected="no"])) { display: none; }
#only-failing:checked ~ #verdicts tbody.family:not(:has(tr.run:not([data-status="pass"]))) { display: none; }
"""
_FAMILY_END = re.compile(r"[:@+]")
NO_FILE = "(no file)"


def family_of(target: str) -> str:
    """`reference:drop-append-on-resume` -> reference, `claude-code@2.1.332+append-never` -> claude-code."""
    return _FAMILY_END.split(target, 1)[0] or target


def scenario_folders(results: Sequence[RunResult]) -> list[str]:
    """Each run's scenario folder, named from the folder above all of them (`scenarios/common`)."""
    parents = [os.path.dirname(os.path.abspath(r.scenario_path)) if r.scenario_path else None for r in results]
    known = [p for p in parents if p]
    if not known:
        return [NO_FILE] * len(results)
    base = os.path.dirname(os.path.commonpath(known))
    return [os.path.relpath(p, base) if p else NO_FILE for p in parents]


def render_run(results: Sequence[RunResult], command: Sequence[str] | None = None, notes: Sequence[str] = ()) -> str:
    """The whole report as one HTML document."""
    results = list(results)
    families = [family_of(r.target) for r in results]
    folders = scenario_folders(results)
    stopped = " (interrupted)" if any(r.interrupted for r in results) else ""
    body = [
        _header(results, command, notes),
        _overviews(results, families, folders),
        '<h2 id="matrix-title">Verdict matrix</h2>',
        '<input type="checkbox" id="only-unexpected"> <label for="only-unexpected" class="filter">'
        "show only runs not as expected</label> &nbsp; "
        '<input type="checkbox" id="only-failing"> <label for="only-failing" class="filter">'
        "show only runs that do not pass</label>",
        _matrix(results, families, folders),
        *(_run_section(n, result, folders[n - 1]) for n, result in enumerate(results, 1)),
    ]
    return document(f"harness run: {_plural(len(results), 'run')}{stopped}", CSS + RUN_CSS + ATTEMPTS_CSS, body)


def write_run(results: Sequence[RunResult], path: Path, command: Sequence[str] | None = None,
              notes: Sequence[str] = ()) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, render_run(results, command, notes))
    return path


# --------------------------------------------------------------------------- header and overview


def _header(results: list[RunResult], command: Sequence[str] | None, notes: Sequence[str]) -> str:
    total = counts(results)
    ok = total["as_expected"] == total["runs"]
    scenarios, targets = len(dict.fromkeys(r.scenario for r in results)), len(dict.fromkeys(r.target for r in results))
    parts = ["<header>", f'<h1>harness run: {_plural(len(results), "run")} <span class="muted">'
                         f'({_plural(scenarios, "scenario")} × {_plural(targets, "target")})</span></h1>']
    stopped = sum(1 for r in results if r.interrupted)
    if stopped:
        parts.append(f'<p id="interrupted" class="interrupted" data-count="{stopped}">INTERRUPTED: {stopped} of '
                     f"{len(results)} runs incomplete or not run; the verdicts below are not a result</p>")
    said = "all verdicts as expected" if ok else "verdicts differ from expectations"
    parts.append(f'<p id="verdict" class="gate {"passes" if ok else "fails"}" '
                 f'data-verdict="{"as-expected" if ok else "differs"}">{said}</p>')
    failed = next((r for r in results if r.harness_failure), None)
    if failed is not None:
        parts.append(f'<p id="harness-failure" class="run-error">the harness failed on its own, not the agent: '
                     f"{esc(failed.harness_failure)} (in {esc(failed.scenario)} on {esc(failed.target)})</p>")
    parts += [f'<p class="note">Note: {esc(note)}</p>' for note in notes]
    labels = {"runs": "runs", "as_expected": "as expected", "unexpected": "unexpected", "errors": "errors",
              "flaky": "flaky", "cannot_express": "cannot express", "pass": "pass", "fail": "fail"}
    parts.append('<ul class="counts" id="counts">' + "".join(
        f'<li data-count-of="{key}" data-count="{total[key]}">{label}: {total[key]}</li>' for key, label in labels.items())
        + "</ul>")
    if command:
        parts.append(f'<p>command:</p><pre id="command">{esc(shlex.join(command))}</pre>')
    parts.append("</header>")
    return "\n".join(parts)


def _grouped(results: list[RunResult], keys: list[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return groups


def _overview(table_id: str, what: str, detail: str, groups: dict[str, list[RunResult]],
              describe: Callable[[list[RunResult]], str], link: Callable[[int], str] | None) -> str:
    rows = []
    for number, (name, runs) in enumerate(groups.items(), 1):
        total = counts(runs)
        shown = f'<a href="#{link(number)}">{esc(name)}</a>' if link else esc(name)
        cells = "".join(f'<td class="num{" bad" if key in ("unexpected", "errors") and total[key] else ""}" '
                        f'data-count-of="{key}">{total[key]}</td>'
                        for key in ("runs", "as_expected", "unexpected", "errors", "cannot_express"))
        rows.append(f'<tr data-group="{attr(name)}"><td>{shown}</td><td>{describe(runs)}</td>{cells}</tr>')
    head = (f"<tr><th>{what}</th><th>{detail}</th><th>runs</th><th>as expected</th><th>unexpected</th><th>errors</th>"
            "<th>cannot express</th></tr>")
    return f'<table class="overview" id="{table_id}"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _overviews(results: list[RunResult], families: list[str], folders: list[str]) -> str:
    by_family = {k: [results[i] for i in v] for k, v in _grouped(results, families).items()}
    by_folder = {k: [results[i] for i in v] for k, v in _grouped(results, folders).items()}
    return (
        '<section id="overview"><h2>By target family and by scenario folder</h2>'
        + _overview("families", "target family", "targets", by_family,
                    lambda runs: ", ".join(f"<code>{esc(t)}</code>" for t in dict.fromkeys(r.target for r in runs)),
                    lambda number: f"family-{number}")
        + _overview("folders", "scenario folder", "scenarios", by_folder,
                    lambda runs: str(len(dict.fromkeys(r.scenario for r in runs))), None)
        + "</section>"
    )


# --------------------------------------------------------------------------- the verdict matrix


def _evidence_id(number: int, check: str) -> str:
    return f"run-{number}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", check).strip("-") or "check")


def _verdict_cell(number: int, check: CheckResult | None) -> str:
    if check is None:
        return '<td class="absent">-</td>'
    text = esc(check.verdict + ("" if check.as_expected else "!"))
    if check.verdict == FAIL:
        text = f'<a href="#{_evidence_id(number, check.check)}">{text}</a>'
    classes = f"v v-{check.verdict}" + ("" if check.as_expected else " unexpected")  # `!` and .unexpected: not as expected
    return (f'<td class="{attr(classes)}" data-check="{attr(check.check)}" data-verdict="{attr(check.verdict)}" '
            f'data-expected-verdict="{attr(check.expected_verdict)}">{text}</td>')


def _status_text(result: RunResult) -> str:
    text = "cannot express" if result.status == CANNOT_EXPRESS else result.status
    return ("flaky · " if result.flaky else "") + text + (" · interrupted" if result.interrupted else "")


def _row(number: int, result: RunResult, family: str, folder: str, columns: list[str]) -> str:
    checks = {c.check: c for c in result.checks}
    place = f'<span class="folder">{esc(folder)}/</span>' if folder != NO_FILE else ""
    expected = "not run" if result.status == CANNOT_EXPRESS else "yes" if result.as_expected else "NO"
    cells = [
        f'<td class="scenario">{place}<a href="#run-{number}">{esc(result.scenario)}</a></td>',
        f'<td class="target"><code>{esc(result.target)}</code></td>',
        *(_verdict_cell(number, checks.get(name)) for name in columns),
        f'<td class="status status-{attr(result.status)}" title="{attr(outcome(result))}">{esc(_status_text(result))}</td>',
        f'<td class="expected expected-{_yes(result.as_expected)}">{expected}</td>',
    ]
    return (f'<tr class="run" id="row-{number}" data-run="{number}" data-scenario="{attr(result.scenario)}" '
            f'data-target="{attr(result.target)}" data-family="{attr(family)}" data-folder="{attr(folder)}" '
            f'data-status="{attr(result.status)}" data-as-expected="{_yes(result.as_expected)}" '
            f'data-flaky="{_yes(result.flaky)}">' + "".join(cells) + "</tr>")


def _matrix(results: list[RunResult], families: list[str], folders: list[str]) -> str:
    columns = check_columns(results)
    head = ("<tr><th>scenario</th><th>target</th>"
            + "".join(f'<th class="check" data-check="{attr(c)}">{esc(c).replace("_", "_<wbr>")}</th>' for c in columns)
            + "<th>status</th><th>as expected</th></tr>")
    bodies = []
    for number, (family, indexes) in enumerate(_grouped(results, families).items(), 1):
        runs = [results[i] for i in indexes]
        total = counts(runs)
        targets = len(dict.fromkeys(r.target for r in runs))
        summary = (f"{_plural(len(runs), 'run')} on {_plural(targets, 'target')}: {total['as_expected']} as expected, "
                   f"{total['unexpected']} unexpected, {_plural(total['errors'], 'error')}"
                   + (f", {total['cannot_express']} cannot express" if total["cannot_express"] else ""))
        rows = [f'<tr class="group-head"><th colspan="{len(columns) + 4}"><code>{esc(family)}</code> '
                f'<span class="muted">{esc(summary)}</span></th></tr>']
        rows += [_row(i + 1, results[i], family, folders[i], columns) for i in indexes]
        bodies.append(f'<tbody class="family" id="family-{number}" data-family="{attr(family)}">{"".join(rows)}</tbody>')
    return (
        '<section id="verdicts">'
        '<p class="muted">Each run\'s verdicts; <code>!</code> marks one that differs from the scenario\'s expectation. '
        "A scenario links to its run: the steps, every verdict, and the requests each failing check compared.</p>"
        f'<table id="matrix"><thead>{head}</thead>{"".join(bodies)}</table></section>'
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


# --------------------------------------------------------------------------- one run


def _run_section(number: int, result: RunResult, folder: str) -> str:
    parts = [
        (f'<section class="run" id="run-{number}" data-run="{number}" data-scenario="{attr(result.scenario)}" '
         f'data-target="{attr(result.target)}" data-status="{attr(result.status)}" '
         f'data-as-expected="{_yes(result.as_expected)}">'),
        (f'<h2>{esc(result.scenario)} · <code>{esc(result.target)}</code> '
         f'<span class="status status-{attr(result.status)}">{esc(outcome(result))}</span>'
         f'<a class="back" href="#row-{number}">back to the matrix</a></h2>'),
    ]
    if result.interrupted:
        parts.append('<p class="interrupted-run">interrupted: the harness was stopped during or before this run; '
                     "its verdicts are not a result</p>")
    if result.cannot_express:
        parts.append(f'<p class="cannot-express">not run: <code>{esc(result.target)}</code> cannot express this '
                     f"scenario: {esc(result.cannot_express)}</p>")
    parts.append(attempts_block(result))
    if result.error:
        parts.append(f'<pre class="run-error">{esc(result.error)}</pre>')
    facts = [("scenario folder", folder if folder != NO_FILE else None), ("scenario file", result.scenario_path),
             ("journal", result.journal), ("launch journal", result.launch_journal), ("workspace kept at", result.workspace)]
    parts.append(f'<dl class="targets facts"><dt>duration</dt><dd>{result.duration_s:.2f}s</dd>'
                 + "".join(f"<dt>{label}</dt><dd><code>{esc(value)}</code></dd>" for label, value in facts if value)
                 + _installed(result) + "</dl>")
    parts += [_timeline(result), _caller_table(result), _checks_table(number, result)]
    parts += [_evidence(number, result, check) for check in result.checks if check.verdict == FAIL]
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _installed(result: RunResult) -> str:
    """The target's install as resolved, folded: an old release is judged with the dependencies listed here."""
    if not result.installed:
        return ""
    head, *rest = result.installed
    summary = f"{esc(head)}, {len(rest)} package(s)" if head.startswith(("resolved", "dependencies")) else \
        f"{len(result.installed)} package(s)"
    items = "".join(f"<li><code>{esc(line)}</code></li>" for line in result.installed)
    return f'<dt>installed</dt><dd class="installed"><details><summary>{summary}</summary><ul>{items}</ul></details></dd>'


def _timeline(result: RunResult) -> str:
    if not result.steps:
        return '<p class="muted no-steps">no step ran</p>'
    rows = "".join(f'<tr data-step="{step.index}">{step_cells(step)}</tr>' for step in result.steps)
    tails = "".join(
        f'<details class="tails" data-step="{step.index}"><summary>step {step.index} ({esc(step.kind)}): '
        "the end of its output</summary>"
        f'<pre class="stdout">{esc(step.stdout_tail)}</pre><pre class="stderr">{esc(step.stderr_tail)}</pre></details>'
        for step in result.steps if step.error and (step.stdout_tail or step.stderr_tail))
    return (f'<h3>Steps</h3><table class="timeline"><thead><tr>{TIMELINE_HEAD}</tr></thead><tbody>{rows}</tbody></table>'
            + tails)


def _caller_table(result: RunResult) -> str:
    rows = caller_text.rows(result)
    if rows is None:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in caller_text.HEADER)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return ("<h3>The caller's text: launcher vs model</h3>"
            f'<table class="caller-text"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def _checks_table(number: int, result: RunResult) -> str:
    if not result.checks:
        return '<p class="muted">no checks</p>'
    rows = []
    first_with: dict[str, str] = {}  # an errored run's checks all say why it was not judged: said once
    for check in result.checks:
        if check.verdict == FAIL:
            said = f'<a href="#{_evidence_id(number, check.check)}">message and requests below</a>'
        elif check.message in first_with:
            said = f'<span class="muted same-message">the same as {esc(first_with[check.message])}</span>'
        else:
            said = f'<pre class="message">{esc(check.message)}</pre>' if check.message else ""
            first_with[check.message] = check.check
        rows.append(f'<tr data-check="{attr(check.check)}"><th>{esc(check.check)}</th>'
                    + _verdict_cell(number, check) + f"<td>{esc(check.expected_verdict)}</td><td>{said}</td></tr>")
    return ('<h3>Verdicts</h3><table class="checks"><thead><tr><th>check</th><th>verdict</th><th>expected</th>'
            f'<th>message</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _evidence(number: int, result: RunResult, check: CheckResult) -> str:
    anchor = _evidence_id(number, check.check)
    view = diff_view(result.scenario, "run", result.target, check, f"{anchor}-requests")
    data = f'id="{anchor}" data-check="{attr(check.check)}" data-as-expected="{_yes(check.as_expected)}"'
    if check.as_expected:  # a known failure: folded, its bytes one click away
        return (f'<details class="evidence" {data}><summary>{esc(check.check)} fails, as the scenario expects: '
                f"the requests it compared</summary>{view}</details>")
    return f'<div class="evidence" {data}>{view}</div>'
