"""The report's only style sheet, inlined: no fonts, images or anything else loaded from anywhere."""

CSS = """
:root { --fg: #1d1f23; --muted: #5b6270; --line: #d7dbe2; --bg: #ffffff; --panel: #f6f7f9;
  --regression: #f7c5c5; --regression-fg: #7d0a0a; --fix: #c6ebc9; --fix-fg: #0d5a17;
  --error: #ffd59e; --error-fg: #7a3a00; --unchanged-fail: #ebe4cf; --unchanged-fail-fg: #5d4b12; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
  margin: 0 auto; padding: 1.2em 1.6em 4em; max-width: 1400px; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.25em; margin: 2em 0 .4em; border-bottom: 2px solid var(--line); padding-bottom: .2em; }
h3 { font-size: 1.08em; margin: 1.4em 0 .3em; } h4 { font-size: 1em; margin: .2em 0 .4em; } h5 { font-size: .95em; margin: 0 0 .3em; }
code, pre, .bytes, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); border: 1px solid var(--line);
  border-radius: 4px; padding: .5em .7em; margin: .3em 0 .6em; }
a { color: #1f57c3; } .muted { color: var(--muted); }
dl.targets { display: grid; grid-template-columns: max-content 1fr; gap: .15em 1em; margin: .4em 0; }
dl.targets dt { font-weight: 600; } dl.targets dd { margin: 0; }
.gate { display: inline-block; font-weight: 700; padding: .25em .8em; border-radius: 4px; margin: .4em 0; }
.gate.passes { background: var(--fix); color: var(--fix-fg); } .gate.fails { background: var(--regression); color: var(--regression-fg); }
ul.gate-failures { margin: .2em 0 .6em; } ul.counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .4em; }
ul.counts li { border: 1px solid var(--line); border-radius: 4px; padding: .15em .6em; }
table { border-collapse: collapse; margin: .4em 0 .8em; }
th, td { border: 1px solid var(--line); padding: .25em .55em; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.c-regression { background: var(--regression); color: var(--regression-fg); font-weight: 600; }
.c-fix { background: var(--fix); color: var(--fix-fg); font-weight: 600; }
.c-error { background: var(--error); color: var(--error-fg); font-weight: 600; }
.c-unchanged-fail { background: var(--unchanged-fail); color: var(--unchanged-fail-fg); }
.c-unchanged-pass { background: transparent; }
td.first-change { outline: 2px solid var(--fg); outline-offset: -3px; }
td.first-change::after { content: " \\25C0 first"; font-weight: 400; font-size: .85em; }
.legend span { display: inline-block; padding: 0 .5em; margin-right: .3em; border: 1px solid var(--line); border-radius: 3px; }
.filter { margin: .6em 0 .2em; } .filter label { cursor: pointer; }
#only-changed:checked ~ table#matrix tr[data-change="unchanged-pass"] { display: none; }
.timeline td.err { color: var(--regression-fg); } .status-error { color: var(--error-fg); font-weight: 700; }
.messages { display: grid; grid-template-columns: 1fr 1fr; gap: .8em; }
.diff-view { border: 1px solid var(--line); border-left: 4px solid var(--regression-fg); border-radius: 4px;
  padding: .6em .8em; margin: .8em 0 1.2em; }
.diff-view[data-side="baseline"] { border-left-color: #8a6d00; }
.diff-summary { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; margin: .2em 0; }
.sides { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: .8em; }
.side { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: .5em .6em; min-width: 0; }
.side p { margin: .15em 0; font-size: .92em; }
.bytes { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; border: 1px solid var(--line);
  border-radius: 3px; padding: .45em .55em; margin: .3em 0 .5em; }
.bytes.cut-start::before, .bytes.cut-end::after { content: "\\2026"; color: var(--muted); background: var(--panel); padding: 0 .3em; }
.window-note { color: var(--muted); }
details > summary { cursor: pointer; color: var(--muted); margin: .2em 0; }
mark { color: inherit; border-radius: 2px; padding: 0; }
mark.identity, .key-identity { background: #cfe0ff; box-shadow: inset 0 -2px 0 #4a78d0; }
mark.appended, .key-appended { background: #e6d5ff; box-shadow: inset 0 -2px 0 #7b4dc4; }
mark.first-diff, .key-first-diff { background: #ffe14d; color: #000; outline: 2px solid #d40000; outline-offset: 0; font-weight: 700; }
mark.first-diff.nl::before { content: "\\21B5"; color: #d40000; padding: 0 .3em; }
mark.first-diff.tab::before { content: "\\21E5"; color: #d40000; padding: 0 .3em; }
mark.first-diff.at-end::after { content: "end of text"; font-weight: 400; font-style: italic; color: #d40000; padding: 0 .3em; }
span.ctl { color: #b00060; background: #fde8f1; border-radius: 2px; }
.key { font-size: .88em; color: var(--muted); } .key span { padding: 0 .25em; color: var(--fg); }
.back { font-size: .85em; font-weight: 400; margin-left: .6em; }
"""
