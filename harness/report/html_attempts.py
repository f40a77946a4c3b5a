"""A run attempted more than once (`--retries`, `--repeat`) on report.html: every attempt, its outcome and journal.

The run's own section shows its last attempt, as for any run; this block lists
the earlier ones beside it, with what each found not as expected, so a flaky
run's disagreement is read on the page rather than inferred from a retry count.
"""

from __future__ import annotations

from harness.report.html_text import attr, esc
from harness.report.wording import attempt_outcome, mismatch_heading
from harness.results import ERROR, RunResult

ATTEMPTS_CSS = """
.flaky { background: var(--error); color: var(--error-fg); font-weight: 700; padding: .2em .5em; border-radius: 4px; }
ol.attempts li.differs { color: var(--regression-fg); }
"""


def attempts_block(result: RunResult) -> str:
    if not result.attempts:
        return ""
    head = ('<p class="flaky">FLAKY: the same inputs gave verdicts that disagree across attempts</p>' if result.flaky
            else f'<p class="muted">attempted {len(result.attempts) + 1} times</p>')
    items = []
    for number, attempt in enumerate([*result.attempts, result], 1):
        last = " (this section's verdicts)" if attempt is result else ""
        journal = f" · journal <code>{esc(attempt.journal)}</code>" if attempt.journal else ""
        details = "".join(f"<pre>{esc(mismatch_heading(c))}\n{esc(c.message)}</pre>" for c in attempt.checks
                          if not c.as_expected and c.verdict != ERROR and attempt is not result)
        if attempt.error and attempt is not result:
            details += f'<pre class="run-error">{esc(attempt.error)}</pre>'
        items.append(f'<li class="{"same" if attempt.attempt_as_expected else "differs"}" data-attempt="{number}" '
                     f'data-as-expected="{"yes" if attempt.attempt_as_expected else "no"}">attempt {number}: '
                     f"{esc(attempt_outcome(attempt))}{last} · {attempt.duration_s:.2f}s{journal}{details}</li>")
    return (f'<div class="attempts" data-flaky="{attr("yes" if result.flaky else "no")}">{head}'
            f'<ol class="attempts">{"".join(items)}</ol></div>')
