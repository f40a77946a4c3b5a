"""`harness import PATH`: write the scenario an artefact shows, and say what it had to assume.

Exit 0 when a scenario was written (it has been read back by the scenario
reader first), 2 on an artefact that cannot be read or an output that exists.
The scenario carries no expectations: run it against the target the incident
came from, and it fails there the way the incident did.
"""

from __future__ import annotations

import argparse
import datetime
import re
import shlex
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.importing import FORMATS, read_draft
from harness.importing.draft import Draft
from harness.scenario.reader import scenario_from_text
from harness.scenario.writer import render

BASE_CHECKS = ("identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved")
NEEDS_APPEND = ("appended_exactly_once", "launch_appended_exactly_once")


def add_parser(sub) -> None:
    parser = sub.add_parser("import", help="turn a Claude Code transcript, a harness journal, an Inspect log or "
                                           "a JSONL of request bodies into a scenario that replays it")
    parser.add_argument("artefact", type=Path, metavar="PATH", help="the file the incident left behind")
    parser.add_argument("--out", "-o", type=Path, metavar="FILE",
                        help="where to write the scenario (default: <imports_dir>/imported-<file name>.yaml, imports_dir "
                             "being configured, else scenarios/imported)")
    parser.add_argument("--name", metavar="NAME", help="the scenario's name (default: imported-<file name>)")
    parser.add_argument("--append", metavar="TEXT",
                        help="the text the launcher appends to the system prompt, when the artefact cannot show it")
    parser.add_argument("--sample", metavar="ID", help="which sample of an Inspect log (its id, or id:epoch; default: the first)")
    parser.add_argument("--format", choices=FORMATS, help="what the file is (default: recognised from its content)")
    parser.add_argument("--force", action="store_true", help="overwrite the output file if it exists")


def run(args: argparse.Namespace, command: list[str]) -> int:
    draft = read_draft(args.artefact, args.format, args.append, args.sample)
    from harness import config

    project = config.current()
    name = args.name or "imported-" + _slug(args.artefact.stem)
    out = args.out or Path(project.place(project.imports_dir)) / f"{name}.yaml"
    if out.exists() and not args.force:
        raise InputError("exists already: pass --force to overwrite it, or --out elsewhere", out)
    text = render(document(draft, name, args.artefact), comment=f"written by harness import from {args.artefact}")
    scenario_from_text(text, out)  # what is written must read back
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the scenario: {exc.strerror or exc}", out) from None
    print(f"{len(draft.steps)} steps from {draft.source}: " + " → ".join(s.kind for s in draft.steps))
    for note in draft.notes:
        print(f"  - {note}")
    print(f"written: {out}")
    # With configured targets the run needs no --target; without, the user names the agent the incident came from.
    target = "" if project.targets else " --target T"
    print(f"replay it: harness run {shlex.quote(str(out))}{target}"
          + ("" if project.targets else "   (T: the agent it came from, a target file or a `harness targets` name)"))
    return 0


def document(draft: Draft, name: str, artefact: Path) -> dict[str, Any]:
    checks = [c for c in (*draft.extra_checks, *BASE_CHECKS) if draft.append is not None or c not in NEEDS_APPEND]
    today = datetime.date.today().isoformat()
    description = " ".join([f"Imported on {today} from {draft.source}, {artefact.name}.", *draft.notes])
    doc: dict[str, Any] = {"name": name, "description": description}
    if draft.append is not None:
        doc["append"] = draft.append
    doc["steps"] = [step.document() for step in draft.steps]
    doc["checks"] = checks
    return doc


def _slug(stem: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._")
    return slug or "artefact"
