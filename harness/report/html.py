"""report.html for `harness diff`: one self-contained page comparing a baseline and a candidate.

The page loads nothing: the style is inline, there is no script (the matrix
filter is a CSS checkbox), and a Content-Security-Policy forbids any load, so
it reads the same from file:// with no network. Every piece of agent, journal
and scenario text is escaped (html_text.esc).

Sections: the header (targets, gate verdict and why, counts per change, the
command), the verdict matrix (scenarios × checks × targets, id="matrix"), then
per scenario the step timeline of both runs, the per-step cells with the step
at which each check first changed, and for every failing check a side-by-side
view of the two requests it compared (html_diffview).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from harness.report import files
from harness.report.html_diffview import diff_view
from harness.report.html_page import TIMELINE_HEAD, document, step_cells
from harness.report.html_style import CSS
from harness.report.html_text import attr, esc
from harness.results import CHANGES, FAIL, SIDES, Comparison, RunResult, ScenarioDiff, TargetOutline
CHANGE_LABELS = {
    "regression": "regression: the baseline passes, the candidate fails",
    "error": "error: a run did not complete that far",
    "fix": "fix: the baseline fails, the candidate passes",
    "unchanged-fail": "unchanged-fail: both fail",
    "unchanged-pass": "unchanged-pass: both pass",
}


def render_comparison(comparison: Comparison, command: list[str] | None = None) -> str:
    """The whole report as one HTML document."""
    anchors = _anchors(comparison)
    title = f"harness diff: {comparison.baseline.name} → {comparison.candidate.name}"
    body = [
        _header(comparison, command),
        _matrix(comparison, anchors),
        *(_scenario(comparison, sd, anchors[i]) for i, sd in enumerate(comparison.scenarios)),
    ]
    return document(title, CSS, body)


def write_comparison(comparison: Comparison, path: Path, command: list[str] | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, render_comparison(comparison, command))
    return path


# --------------------------------------------------------------------------- header and matrix


def _anchors(comparison: Comparison) -> list[str]:
    return [f"scenario-{i + 1}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", sd.scenario.name).strip("-") or "unnamed")
            for i, sd in enumerate(comparison.scenarios)]


def _target_line(target: TargetOutline) -> str:
    where = f" <span class=\"muted\">({esc(target.source)})</span>" if target.source else ""
    return f"<code>{esc(target.name)}</code>{where} <span class=\"muted\">identity /{esc(target.identity_regex)}/</span>"


def _header(comparison: Comparison, command: list[str] | None) -> str:
    failures = comparison.gate_failures()
    verdict = "fails" if failures else "passes"
    counts = comparison.counts()
    parts = [
        "<header>",
        f"<h1>harness diff: <code>{esc(comparison.baseline.name)}</code> → <code>{esc(comparison.candidate.name)}</code></h1>",
        '<dl class="targets">',
        f"<dt>baseline</dt><dd id=\"baseline-target\">{_target_line(comparison.baseline)}</dd>",
        f"<dt>candidate</dt><dd id=\"candidate-target\">{_target_line(comparison.candidate)}</dd>",
        f"<dt>scenarios</dt><dd>{len(comparison.scenarios)}</dd>",
        "</dl>",
        f'<p id="gate" class="gate {verdict}" data-gate="{verdict}">gate {verdict}</p>',
    ]
    if failures:
        parts.append('<ul class="gate-failures" id="gate-failures">'
                     + "".join(f"<li>{esc(f)}</li>" for f in failures) + "</ul>")
    options = []
    if comparison.fail_on_unchanged_fail:
        options.append("checks failing on both sides fail the gate")
    if comparison.required_fixes:
        options.append("required fixes: " + ", ".join(comparison.required_fixes))
    if options:
        parts.append(f'<p class="muted">gate options: {esc("; ".join(options))}</p>')
    parts.append('<ul class="counts" id="counts">' + "".join(
        f'<li class="c-{change}" data-change="{change}" data-count="{counts[change]}">{esc(change)}: {counts[change]}</li>'
        for change in CHANGES) + "</ul>")
    if command:
        parts.append(f'<p>command:</p><pre id="command">{esc(shlex.join(command))}</pre>')
    parts.append("</header>")
    return "\n".join(parts)


def _columns(comparison: Comparison) -> list[str]:
    columns: list[str] = []
    for sd in comparison.scenarios:
        columns.extend(c for c in sd.scenario.checks if c not in columns)
    return columns


def _matrix(comparison: Comparison, anchors: list[str]) -> str:
    columns = _columns(comparison)
    legend = "".join(f'<span class="c-{c}">{esc(CHANGE_LABELS[c])}</span>' for c in CHANGES)
    rows = []
    for sd, anchor in zip(comparison.scenarios, anchors):
        cells = [f'<td class="scenario"><a href="#{attr(anchor)}">{esc(sd.scenario.name)}</a></td>']
        for check in columns:
            if check not in sd.scenario.checks:
                cells.append('<td class="absent" colspan="3">not checked</td>')
                continue
            final = sd.final(check)
            data = f'data-check="{attr(check)}" data-change="{final.change}"'
            cells.append(f'<td class="c-{final.change} verdict" {data} data-side="baseline">{esc(final.baseline)}</td>')
            cells.append(f'<td class="c-{final.change} verdict" {data} data-side="candidate">{esc(final.candidate)}</td>')
            cells.append(f'<td class="c-{final.change} change" {data}>{esc(final.change)}</td>')
        cells.append(f'<td class="c-{sd.change} overall" data-overall="{sd.change}">{esc(sd.change)}</td>')
        rows.append(f'<tr data-scenario="{attr(sd.scenario.name)}" data-change="{sd.change}">' + "".join(cells) + "</tr>")
    head1 = ('<tr><th rowspan="2">scenario</th>'
             + "".join(f'<th colspan="3">{esc(c)}</th>' for c in columns) + '<th rowspan="2">scenario change</th></tr>')
    head2 = "<tr>" + "<th>baseline</th><th>candidate</th><th>change</th>" * len(columns) + "</tr>"
    return (
        '<section id="verdicts"><h2>Verdict matrix</h2>'
        f'<p class="legend">{legend}</p>'
        '<p class="muted">Final verdicts: each side judged on its whole journal. A scenario links to its steps and evidence.</p>'
        '<input type="checkbox" id="only-changed"> <label for="only-changed" class="filter">'
        "hide scenarios where every check passes on both sides</label>"
        f'<table id="matrix"><thead>{head1}{head2}</thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


# --------------------------------------------------------------------------- one scenario


def _scenario(comparison: Comparison, sd: ScenarioDiff, anchor: str) -> str:
    scenario = sd.scenario
    parts = [
        f'<section class="scenario" id="{attr(anchor)}" data-scenario="{attr(scenario.name)}" data-change="{sd.change}">',
        (f'<h2>{esc(scenario.name)} <span class="c-{sd.change}">{esc(sd.change)}</span>'
         '<a class="back" href="#matrix">back to the matrix</a></h2>'),
    ]
    if scenario.description:
        parts.append(f"<p>{esc(scenario.description.strip())}</p>")
    if scenario.path:
        parts.append(f'<p class="muted">file: <code>{esc(scenario.path)}</code></p>')
    parts.append('<p>appended text: ' + (f'<code class="append">{esc(scenario.append)}</code>' if scenario.append
                                          else '<span class="muted">none</span>') + "</p>")
    parts.append(_steps_table(sd))
    for side, target in zip(SIDES, (comparison.baseline, comparison.candidate)):
        parts.append(_timeline(sd, side, target))
    parts.append(_cells_table(sd))
    for check in scenario.checks:
        parts.append(_check_section(comparison, sd, check, anchor))
    parts.append("</section>")
    return "\n".join(parts)


def _steps_table(sd: ScenarioDiff) -> str:
    rows = "".join(
        f"<tr><td class=\"num\">{s.index}</td><td>{esc(s.kind)}</td><td>{esc(s.prompt) if s.prompt is not None else ''}</td></tr>"
        for s in sd.scenario.steps)
    return f'<table class="scenario-steps"><thead><tr><th>step</th><th>kind</th><th>prompt</th></tr></thead><tbody>{rows}</tbody></table>'


def _timeline(sd: ScenarioDiff, side: str, target: TargetOutline) -> str:
    result: RunResult = getattr(sd, side)
    by_index = {s.index: s for s in result.steps}
    head = (f'<h3>{esc(side)} <code>{esc(target.name)}</code>: run <span class="status-{attr(result.status)}">'
            f"{esc(result.status)}</span> <span class=\"muted\">({result.duration_s:.2f}s)</span></h3>")
    if result.error:
        head += f'<pre class="run-error">{esc(result.error)}</pre>'
    rows = []
    for step in sd.scenario.steps:
        run = by_index.get(step.index)
        if run is None:
            rows.append(f'<tr data-step="{step.index}"><td class="num">{step.index}</td><td>{esc(step.kind)}</td>'
                        '<td colspan="8" class="muted">not run</td></tr>')
            continue
        rows.append(f'<tr data-step="{run.index}">{step_cells(run)}</tr>')
    table = (f'<table class="timeline" data-side="{side}"><thead><tr>{TIMELINE_HEAD}</tr></thead>'
             f"<tbody>{''.join(rows)}</tbody></table>")
    return head + table


def _cells_table(sd: ScenarioDiff) -> str:
    steps = sd.scenario.steps
    head = "<tr><th>check</th>" + "".join(f"<th>step {s.index}<br>{esc(s.kind)}</th>" for s in steps) + "<th>first change</th></tr>"
    rows = []
    for check in sd.scenario.checks:
        first = sd.first_change(check)
        cells = {c.step: c for c in sd.cells if c.check == check}
        tds = []
        for step in steps:
            cell = cells.get(step.index)
            if cell is None:
                tds.append("<td>-</td>")
                continue
            mark = " first-change" if first is not None and first.step == step.index else ""
            tds.append(f'<td class="c-{cell.change}{mark}" data-step="{step.index}" data-change="{cell.change}" '
                       f'title="{attr(cell.change)}">{esc(cell.baseline)} / {esc(cell.candidate)}</td>')
        if first is None:
            said = "no change at any step"
        else:
            kind = next((s.kind for s in steps if s.index == first.step), "")
            said = f"step {first.step} ({kind}): {first.change}"
        rows.append(f'<tr data-check="{attr(check)}" data-first-change="{first.step if first else ""}"><th>{esc(check)}</th>'
                    + "".join(tds) + f"<td>{esc(said)}</td></tr>")
    return ('<h3>Per-step verdicts <span class="muted">(baseline / candidate, each judged on its journal as of that step)</span></h3>'
            f'<table class="step-cells"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>')


def _check_section(comparison: Comparison, sd: ScenarioDiff, check: str, anchor: str) -> str:
    final = sd.final(check)
    targets = dict(zip(SIDES, (comparison.baseline, comparison.candidate)))
    results = {side: sd.evidence(side, check) for side in SIDES}
    parts = [f'<div class="check" data-check="{attr(check)}" data-change="{final.change}">',
             (f'<h3>{esc(check)}: baseline {esc(final.baseline)}, candidate {esc(final.candidate)} '
              f'<span class="c-{final.change}">{esc(final.change)}</span></h3>'),
             '<div class="messages">']
    views = {side: diff_view(sd.scenario.name, side, targets[side].name, results[side], f"{anchor}-{check}-{side}")
             for side in SIDES if getattr(final, side) == FAIL and results[side] is not None}
    for side in SIDES:
        if side in views:
            shown = f'<p class="muted"><a href="#{attr(anchor)}-{attr(check)}-{side}">message and requests below</a></p>'
        else:
            message = results[side].message if results[side] is not None else "not judged"
            shown = f'<pre class="message" data-side="{side}">{esc(message)}</pre>'
        parts.append(f"<div><h5>{esc(side)}</h5>{shown}</div>")
    parts.append("</div>")
    parts.extend(views.values())
    parts.append("</div>")
    return "\n".join(parts)
