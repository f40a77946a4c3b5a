"""bench.json and bench.md: the figures as data, and the short table docs/findings/benchmarks.md quotes.

The markdown is rendered from the JSON document alone (render_markdown), so a
table can always be redrawn from a kept bench.json, and the targets the issue
set are judged in one place (verdicts) for both.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.bench.machine import machine_line

OVERHEAD_LIMIT = 1.05  # harness wall time at most 5% over the bare agent processes
ADDED_LATENCY_LIMIT_MS = 1.0  # the fake API's median added latency per streamed reply
IN_PROCESS_FLOOR = 300.0  # in-process exploration steps per second on the reference agent


def verdicts(document: dict) -> list[dict]:
    """Each target the issue set, with the figure measured and whether it was met (None: not measured)."""
    found = []
    for entry in document.get("overhead") or []:
        ratio = entry.get("ratio")
        found.append({"target": f"overhead on {entry.get('target')}", "limit": f"<= +{(OVERHEAD_LIMIT - 1) * 100:.0f}%",
                      "figure": None if ratio is None else f"+{(ratio - 1) * 100:.1f}%",
                      "met": None if ratio is None else ratio <= OVERHEAD_LIMIT})
    latency = (document.get("fakeapi") or {}).get("keep_alive")
    added = latency.get("added_median_ms") if latency else None
    found.append({"target": "fake API median added latency per streamed reply", "limit": f"< {ADDED_LATENCY_LIMIT_MS:g} ms",
                  "figure": None if added is None else f"{added:.3f} ms",
                  "met": None if added is None else added < ADDED_LATENCY_LIMIT_MS})
    most = max((level for level in (document.get("fakeapi") or {}).get("throughput") or [] if level["clients"] > 1),
               key=lambda level: level["clients"], default=None)
    versus = most.get("fake_vs_one_client") if most else None
    found.append({"target": f"fake API throughput, {most['clients'] if most else 16} concurrent clients against one",
                  "limit": ">= one client's replies/s", "figure": None if versus is None else f"×{versus:.2f}",
                  "met": None if versus is None else versus >= 1.0})
    speed = (document.get("explore") or {}).get("in_process_steps_per_s")
    found.append({"target": "in-process exploration on the reference agent", "limit": f">= {IN_PROCESS_FLOOR:g} steps/s",
                  "figure": None if speed is None else f"{speed:.0f} steps/s",
                  "met": None if speed is None else speed >= IN_PROCESS_FLOOR})
    bisection = document.get("bisect") or {}
    installed = bisection.get("installed")
    found.append({"target": "releases installed per bisect", "limit": "<= ⌈log2(n-1)⌉ + 2 (the two ends)",
                  "figure": None if installed is None else f"{installed} of {bisection['releases']}",
                  "met": None if installed is None else installed <= bisection["bound"]})
    return found


def write(document: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "bench.json", out_dir / "bench.md"
    json_path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(document), encoding="utf-8")
    return json_path, md_path


def _met(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: "not measured"}[met]


def _x(ratio: float) -> str:
    return f"×{ratio:.3f} ({(ratio - 1) * 100:+.1f}%)"


def render_markdown(document: dict) -> str:
    machine = document.get("machine") or {}
    lines = ["# `make bench`", ""]
    lines.append(f"Machine: {machine_line(machine)}.")
    lines.append(f"Load average (1, 5, 15 min) at the start {machine.get('load_average_start')}, at the end "
                 f"{document.get('load_average_end')}; {document.get('started', '?')}, "
                 f"{document.get('duration_s', 0):.0f} s in all{' (--quick)' if document.get('quick') else ''}.")
    lines += ["", "| measurement | figure | target |", "|---|---|---|"]
    targets = {v["target"]: v for v in verdicts(document)}
    for entry in document.get("overhead") or []:
        name = f"overhead on {entry.get('target')}"
        if "error" in entry or "skipped" in entry:
            lines.append(f"| {name} | not measured: {entry.get('error') or entry.get('skipped')} | - |")
            continue
        verdict = targets[name]
        lines.append(
            f"| harness overhead, {entry['target']} ({entry['scenario']}, {entry['steps']} steps, "
            f"median of {entry['rounds']} alternating rounds) | {_x(entry['ratio'])}: harness "
            f"{entry['harness_s']['median']:.3f} s against bare processes {entry['bare_s']['median']:.3f} s; "
            f"{_x(entry['ratio_no_netns'])} with HARNESS_NETNS=off"
            + (f"; {_x(entry['ratio_per_step_netns'])} with a namespace per step (before)"
               if "ratio_per_step_netns" in entry else "")
            + f" | {verdict['limit']}: {_met(verdict['met'])} |")
    fake = document.get("fakeapi") or {}
    if "error" in fake:
        lines.append(f"| fake API | not measured: {fake['error']} | - |")
    elif fake:
        keep, fresh = fake["keep_alive"], fake["new_connection"]
        verdict = targets["fake API median added latency per streamed reply"]
        lines.append(
            f"| fake API added latency per streamed reply (keep-alive, {keep['replies']} replies; fake minus "
            f"baseline) | median {keep['added_median_ms']:.3f} ms, p99 {keep['added_p99_ms']:.3f} ms (raw: fake "
            f"{keep['fake_ms']['median']:.3f} / {keep['fake_ms']['p99']:.3f} ms, baseline {keep['baseline_ms']['median']:.3f}"
            f" / {keep['baseline_ms']['p99']:.3f} ms) | median {verdict['limit']}: {_met(verdict['met'])} |")
        lines.append(
            f"| fake API, a new connection per reply ({fresh['replies']} replies) | median {fresh['added_median_ms']:.3f} ms, "
            f"p99 {fresh['added_p99_ms']:.3f} ms added (host TCP table {fresh.get('host_tcp_sockets')} entries) | - |")
        for level in fake.get("throughput") or []:
            versus = level.get("fake_vs_one_client")
            verdict = targets.get(f"fake API throughput, {level['clients']} concurrent clients against one")
            target = f"{verdict['limit']}: {_met(verdict['met'])}" if verdict else "-"
            shown = f", ×{versus:.2f} of one client's" if versus is not None and level["clients"] > 1 else ""
            lines.append(f"| fake API throughput, {level['clients']} concurrent loopback client(s) | "
                         f"{level['fake_replies_per_s']:.0f} replies/s{shown} (baseline server "
                         f"{level['baseline_replies_per_s']:.0f}) | {target} |")
    explore = document.get("explore") or {}
    if "error" in explore:
        lines.append(f"| exploration | not measured: {explore['error']} | - |")
    elif explore:
        verdict = targets["in-process exploration on the reference agent"]
        lines.append(
            f"| `harness explore`, reference, up to {explore['max_steps']} steps, median of {len(explore['rounds']['in_process'])} "
            f"rounds | in-process {explore['in_process_steps_per_s']:.0f} steps/s, fresh processes "
            f"{explore['subprocess_steps_per_s']:.1f} steps/s (×{explore['speedup']:.0f}) | in-process {verdict['limit']}: "
            f"{_met(verdict['met'])} |")
    library = document.get("library") or {}
    if "error" in library:
        lines.append(f"| scenario library | not measured: {library['error']} | - |")
    elif library:
        serial, two = library["serial"], library["two_workers"]
        lines.append(
            f"| `harness run` {library['library']} ({serial['runs']} runs) | serial {serial['wall_s']:.1f} s, "
            f"`-n 2` {two['wall_s']:.1f} s (×{library['speedup']:.2f}); exit {serial['exit_code']} and {two['exit_code']} | - |")
    bisection = document.get("bisect") or {}
    if "error" in bisection:
        lines.append(f"| `harness bisect` | not measured: {bisection['error']} | - |")
    elif bisection:
        verdict = targets["releases installed per bisect"]
        lines.append(
            f"| `harness bisect`, `{bisection['range']}`, empty tools folder | {bisection['installed']} releases installed "
            f"of {bisection['releases']} (⌈log2 n⌉ = {bisection['log2_n']}; {bisection['skipped']} skipped), first changed "
            f"{bisection['first_changed']}, {bisection['wall_s']:.0f} s | {verdict['limit']} = {bisection['bound']}: "
            f"{_met(verdict['met'])} |")
    lines += _gate_lines(document.get("gate") or {})
    return "\n".join(lines) + "\n"


def _gate_lines(gate: dict) -> list[str]:
    """make run per suite on every core: wall time against the agents' CPU time over the cores (harness/bench/gate.py)."""
    if "error" in gate:
        return ["", f"The gate against the agents' own time: not measured: {gate['error']}"]
    if not gate:
        return []
    lines = ["", f"The gate against the agents' own time: each suite as make run runs it (`-n {gate['cores']}`), its wall "
             f"time against the sum of its agent processes' CPU time over {gate['cores']} cores (1.0: only ever waiting "
             "for agents).", "", "| suite | runs | wall | agents' CPU / cores | gate |", "|---|---|---|---|---|"]
    for row in gate["suites"]:
        figure = "-" if row["gate"] is None else f"×{row['gate']:.2f}"
        unmeasured = f" ({row['steps_unmeasured']} in-process steps not counted)" if row["steps_unmeasured"] else ""
        lines.append(f"| {row['suite']} | {row['runs']} | {row['wall_s']:.1f} s | {row['limit_s']:.1f} s{unmeasured} | "
                     f"{figure}{'' if not row['exit_code'] else ', exit ' + str(row['exit_code'])} |")
    total = "-" if gate["gate"] is None else f"×{gate['gate']:.2f}"
    lines.append(f"| all | {sum(r['runs'] for r in gate['suites'])} | {gate['wall_s']:.1f} s | {gate['limit_s']:.1f} s | {total} |")
    return lines
