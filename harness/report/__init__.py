"""Every output of a command renders the same results, each a reporter (report/reporter.py) chosen with --reporter.

`harness run` renders its RunResults as results.json, summary.md, junit.xml,
report.html and the console; `harness diff` its Comparison as comparison.json,
summary.md, junit.xml, report.html and the console. The order here is the
order they are written in and listed.
"""

from __future__ import annotations

from harness.report import caller_text, comparison, console, html, html_run, json_report, junit, markdown
from harness.report.reporter import ConsoleReporter, FileReporter, Reporter
from harness.results import Comparison, RunResult

RUN_REPORTERS: tuple[Reporter[list[RunResult]], ...] = (
    FileReporter("json", "results.json", lambda results, path, c: json_report.write(results, path, list(c.command), c.notes)),
    FileReporter("markdown", "summary.md", lambda results, path, c: markdown.write(results, path, c.notes)),
    FileReporter("junit", "junit.xml", lambda results, path, c: junit.write(results, path, c.notes)),
    FileReporter("html", "report.html", lambda results, path, c: html_run.write_run(results, path, list(c.command), c.notes)),
    ConsoleReporter(lambda results: (console.table(results), caller_text.text_section(results),
                                     console.failure_details(results))),
)
DIFF_REPORTERS: tuple[Reporter[Comparison], ...] = (
    FileReporter("json", "comparison.json", lambda diff, path, c: comparison.write_json(diff, path, list(c.command))),
    FileReporter("markdown", "summary.md", lambda diff, path, c: comparison.write_markdown(diff, path)),
    FileReporter("junit", "junit.xml", lambda diff, path, c: comparison.write_junit(diff, path)),
    FileReporter("html", "report.html", lambda diff, path, c: html.write_comparison(diff, path, list(c.command))),
    ConsoleReporter(lambda diff: (comparison.table(diff), comparison.details(diff))),
)

