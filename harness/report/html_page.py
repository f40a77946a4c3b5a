"""What both report.html pages share: a document that loads nothing, and a step's cells in a timeline.

`harness diff` and `harness run` render different results, but a reviewer who
opens one after the other should meet the same page rules (inline style, no
script, a Content-Security-Policy that forbids every load, so the page reads
the same from file:// with no network) and the same step columns, written
once so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Sequence

from harness.report.html_text import attr, esc
from harness.results import StepResult

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; script-src 'none'; base-uri 'none'; form-action 'none'"
TIMELINE_HEAD = ("<th>step</th><th>kind</th><th>exit</th><th>duration</th><th>requests</th><th>by class</th>"
                 "<th>session id</th><th>pids</th><th>notes</th><th>error</th>")


def document(title: str, css: str, body: Sequence[str]) -> str:
    """The whole page: every part of `body` is already escaped markup."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{attr(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def step_cells(step: StepResult) -> str:
    """A step as it happened, one cell per TIMELINE_HEAD column."""
    state = "timeout" if step.timed_out else esc(step.exit_code)
    classes = ", ".join(f"{n} {esc(k)}" for k, n in step.classes.items()) or "none"
    notes = "<br>".join(esc(n) for n in step.notes)
    return (
        f'<td class="num">{step.index}</td><td>{esc(step.kind)}</td>'
        f'<td class="num exit">{state}</td><td class="num">{step.duration_s:.2f}s</td>'
        f'<td class="num">{step.requests}</td><td class="classes">{classes}</td>'
        f'<td class="mono session">{esc(step.session_id or "")}</td><td class="mono">{esc(", ".join(map(str, step.pids)))}</td>'
        f"<td>{notes}</td><td class=\"err\">{esc(step.error or '')}</td>"
    )
