"""`python -m harness.bench [--out DIR] [--quick] [--parts ...]`: every measurement in turn, then the table.

A progress line as each measurement finishes, so a run of several minutes
says what it is doing; the markdown table at the end, as written to
DIR/bench.md beside DIR/bench.json. A measurement that cannot be taken (an
agent that fails, say) is recorded as such and makes the exit code 1; a
target that is missed is a figure, not a failure of the bench.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

import harness
from harness.bench import gate, machine, report

CHECKOUT = Path(harness.__file__).resolve().parent.parent
PARTS = ("overhead", "fakeapi", "explore", "library", "bisect", "gate")
REFERENCE = ("retry-after-wrong-answer.yaml", "reference")
CLAUDE_CODE = ("claude-code/wrong-answer-then-retry.yaml", "claude-code@{version}+append-every-launch")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CHECKOUT / "reports" / "bench", metavar="DIR",
                        help="where bench.json and bench.md go (default: reports/bench)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and replies, two scenarios of the library instead of all of it")
    parser.add_argument("--parts", default=",".join(PARTS), metavar="P[,P...]",
                        help=f"which measurements ({', '.join(PARTS)}; default: all)")
    args = parser.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; expected some of {', '.join(PARTS)}")
    return args


def main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    args = parse_args(argv)

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    started, clock = time.perf_counter(), datetime.datetime.now(datetime.timezone.utc)
    document: dict = {"version": 1, "started": clock.isoformat(timespec="seconds"), "quick": args.quick,
                      "machine": machine.describe(CHECKOUT)}
    say(f"harness bench{' --quick' if args.quick else ''}: {machine.machine_line(document['machine'])}")
    failed = False
    scratch = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    try:
        steps: dict[str, Callable[[Callable[[str], None]], object]] = {
            "overhead": lambda progress: _overhead(args.quick, scratch, progress),
            "fakeapi": lambda progress: _fakeapi(args.quick, scratch, progress),
            "explore": lambda progress: _explore(args.quick, progress),
            "library": lambda progress: _library(args.quick, scratch, progress),
            "bisect": lambda progress: _bisect(args.quick, scratch, progress),
            "gate": lambda progress: gate.measure(scratch, CHECKOUT, args.quick, progress, keep=args.out),
        }
        for part in args.parts:
            say(f"{part}:")
            began = time.perf_counter()
            try:
                document[part] = steps[part](lambda line: say(f"  {line}"))
            except Exception as exc:  # the measurement could not be taken: said, recorded, and the exit code is 1
                failed = True
                document[part] = {"error": f"{type(exc).__name__}: {exc}"}
                say(f"  could not be measured: {exc}")
                traceback.print_exc(file=sys.stderr)
            if part == "overhead" and isinstance(document[part], list):  # one target's failure, the other measured
                failed = failed or any("error" in entry for entry in document[part])
            say(f"  ({time.perf_counter() - began:.1f} s)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    document["load_average_end"] = machine.load_average()
    document["duration_s"] = round(time.perf_counter() - started, 1)
    document["targets"] = report.verdicts(document)
    json_path, md_path = report.write(document, args.out)
    say("")
    say(report.render_markdown(document).rstrip("\n"))
    say(f"\nwritten: {json_path}, {md_path}")
    return 1 if failed else 0


def _overhead(quick: bool, scratch: Path, progress: Callable[[str], None]) -> list[dict]:
    from harness.bench import overhead
    from harness.scenario.reader import load_scenario
    from harness.targets import claude_code, resolve_target
    from harness.targets.installs import tools_root

    results = []
    cases = [(REFERENCE, 3 if quick else 10)]
    pinned = CLAUDE_CODE[1].format(version=claude_code.PINNED_VERSION)
    installed = (tools_root() / "claude-code" / claude_code.PINNED_VERSION / ".complete").is_file()
    if installed or not quick:  # the full bench installs it if need be (make bench runs `harness install` first)
        cases.append(((CLAUDE_CODE[0], pinned), 3 if quick else 12))
    else:
        results.append({"target": pinned, "skipped": f"not installed under {tools_root()} (make tools installs it)"})
    for (path, spec), rounds in cases:
        scenario = load_scenario(CHECKOUT / "scenarios" / path)
        target, = resolve_target(spec)
        progress(f"{target.name}, {scenario.name}: bare processes, the harness, the harness without "
                 "namespaces, the harness with a namespace per step (before)")
        try:
            got = overhead.measure(scenario, target, rounds, scratch, progress)
        except overhead.BenchError as exc:
            progress(f"could not be measured: {exc}")
            results.append({"target": target.name, "scenario": scenario.name, "error": str(exc)})
            continue
        progress(f"→ {target.name}: harness {got['harness_s']['median']:.3f} s, bare {got['bare_s']['median']:.3f} s, "
                 f"×{got['ratio']:.3f}; a namespace per step (before) ×{got['ratio_per_step_netns']:.3f}; "
                 f"without namespaces ×{got['ratio_no_netns']:.3f}; "
                 f"{got['in_steps_per_step_ms']:.1f} ms per step in the steps, {got['around_steps_ms']:.1f} ms around them")
        results.append(got)
    return results


def _fakeapi(quick: bool, scratch: Path, progress: Callable[[str], None]) -> dict:
    from harness.bench import fakeapi_latency

    if quick:
        return fakeapi_latency.measure(scratch, CHECKOUT, 200, 40, [4], 1.0, progress)
    return fakeapi_latency.measure(scratch, CHECKOUT, 1000, 200, [1, 4, 16], 2.0, progress)


def _explore(quick: bool, progress: Callable[[str], None]) -> dict:
    from harness.bench import explore_speed

    budgets = explore_speed.Budgets(30, 3, 6, 2) if quick else explore_speed.Budgets()
    got = explore_speed.measure(budgets, progress)
    progress(f"→ in-process {got['in_process_steps_per_s']:.0f} steps/s, fresh processes "
             f"{got['subprocess_steps_per_s']:.1f} steps/s")
    return got


def _library(quick: bool, scratch: Path, progress: Callable[[str], None]) -> dict:
    from harness.bench import library_wall

    return library_wall.measure(scratch, CHECKOUT, quick, progress)


def _bisect(quick: bool, scratch: Path, progress: Callable[[str], None]) -> dict:
    from harness.bench import bisect_installs

    return bisect_installs.measure(scratch, CHECKOUT, quick, progress)
