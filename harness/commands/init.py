"""`harness init`: the harness set up in a team's repository, every file commented, nothing overwritten.

It writes the [tool.harness] table (or harness.toml), a target-file template
for the agent's wire format, two starter scenarios, a CI job and the
.gitignore lines, then says what to do next: the shortest path from
`pip install` to a gate that runs the team's own agent, without reading the
harness's source first.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.common import EXIT_OK
from harness.config import shown
from harness.commands.init_ci import CI_CHOICES, include_line
from harness.commands.init_plan import CONFIG_CHOICES
from harness.commands.init_templates import DEFAULT_WIRE_FORMAT, TARGET_FILE, WIRE_FORMATS


def add_parser(sub) -> None:
    init = sub.add_parser("init", help="set the harness up in your repository: configuration, a target file, "
                                       "two starter scenarios, a CI job, .gitignore lines",
                          description="Write the harness's files into a repository; refuses (exit 2, nothing "
                                      "written) when any of them exists.")
    init.add_argument("--dir", default=".", metavar="PATH", help="the repository's folder (default: the current one)")
    init.add_argument("--config", choices=CONFIG_CHOICES,
                      help="where the configuration goes: a [tool.harness] table appended to pyproject.toml, or "
                           "harness.toml (default: pyproject.toml when the folder has one)")
    init.add_argument("--wire-format", choices=WIRE_FORMATS, default=DEFAULT_WIRE_FORMAT,
                      help=f"the API your agent speaks, for the target-file template (default: {DEFAULT_WIRE_FORMAT})")
    init.add_argument("--ci", choices=CI_CHOICES, default="github",
                      help="the CI job to write: .github/workflows/harness.yml, .gitlab/harness.gitlab-ci.yml, or none "
                           "(default: github)")
    init.add_argument("--requirement", metavar="REQ",
                      help="what the CI job pip-installs (default: where this harness was installed from, when pip "
                           "recorded a URL; else the distribution's name)")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.commands import init_plan
    from harness.commands.init_ci import harness_source

    folder = Path(args.dir)
    source = harness_source(args.requirement) if args.ci != "none" else None
    planned = init_plan.plan(init_plan.Choices(folder, args.config, args.wire_format, args.ci, source))
    init_plan.write(planned)
    for item in planned:
        print(f"wrote {shown(item.path)}" + (f" ({item.note})" if item.note else ""))
    print()
    print(_next_steps(folder, planned, args.ci))
    return EXIT_OK


def _next_steps(folder: Path, planned, ci: str) -> str:
    where = "" if folder.resolve() == Path.cwd().resolve() else f" (in {shown(folder)})"
    top = sorted({item.path.relative_to(folder).parts[0] for item in planned})
    steps = [
        f"Next{where}:",
        f"  1. Edit {TARGET_FILE}: make launch, resume and compact run your agent (each key is explained there).",
        f"  2. harness doctor {TARGET_FILE}",
        "     one launch and one resume against the fake API: what your agent sent, and what to change in the file",
        "  3. harness run",
        "     the starter scenarios against your agent; each check passes, or fails with the bytes as evidence",
        f"  4. Commit: git add {' '.join(top)}",
    ]
    if ci == "gitlab":
        steps += ["", "Then include the CI job from .gitlab-ci.yml:", *("  " + line for line in include_line().splitlines())]
    return "\n".join(steps)
