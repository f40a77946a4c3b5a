"""`harness clean`: remove what the harness leaves behind on purpose for reuse, or by accident when killed.

The git worktrees of `FILE@REV` targets stay registered in the team's
repository (`git worktree list` shows them) and on disk in the tools folder,
so the next comparison of the same commit reuses them; nothing else removes
them. A harness killed with SIGKILL leaves its runs' workspaces in the
temporary folder; every command sweeps those of dead runs at its start, and
`clean` does too, with `--kept` also the ones `--keep-workspace` kept. Agent
installs stay: they are the expensive part, and `harness install` is how they
change.
"""

from __future__ import annotations

import argparse
import sys

from harness.commands.common import EXIT_OK


def add_parser(sub) -> None:
    clean = sub.add_parser("clean", help="remove the harness's git worktrees and the workspaces of dead runs")
    clean.add_argument("--kept", action="store_true",
                       help="also remove the workspaces --keep-workspace kept (yours, in the temporary folder)")
    clean.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.isolation import workspace_owner
    from harness.targets.checkout import harness_worktrees, remove_worktree
    from harness.targets.installs import tools_root

    worktrees = harness_worktrees()
    for home in worktrees:
        print(f"would remove {home}" if args.dry_run else remove_worktree(home))
    if not worktrees:
        print(f"no worktrees in {tools_root() / 'worktrees'}")
    stale = workspace_owner.stale_workspaces(include_kept=args.kept)
    for folder in stale:
        print(f"would remove {folder}" if args.dry_run else f"removed workspace {folder}")
    if not args.dry_run:
        workspace_owner.remove(stale)
    kept = "" if args.kept else " (kept ones stay: --kept removes them too)"
    print(f"{len(stale)} workspace(s) of dead runs{kept}", file=sys.stderr)
    return EXIT_OK
