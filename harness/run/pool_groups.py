"""The process groups a pooled run has started, noted from /proc, and killed with a worker that dies mid-run.

A step's agent runs in a session of its own (harness/isolation/process.py), so
a worker killed by the parent (harness/run/pool.py, after a stop's grace time)
would leave it running: the parent notes what each run has started while it
runs, and kills those groups when the worker goes without ending its run.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, start time) of every process, from /proc (empty where there is none)."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            table[int(stat.parent.name)] = (int(fields[1]), int(fields[2]), fields[19])
        except (OSError, IndexError, ValueError):
            continue
    return table


def descendant_groups(pid: int, table: dict[int, tuple[int, int, str]] | None = None) -> set[tuple[int, str]]:
    """The process groups (with their leader's start time) of everything `pid` started, its own group excepted."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(child)
    groups, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            group = table[child][1]
            if group != os.getpgrp() and group in table:  # the harness's own group holds the parent and the workers
                groups.add((group, table[group][2]))
    return groups


def kill_groups(groups: set[tuple[int, str]]) -> None:
    """SIGKILL each group whose leader is still the process it was (a pid is not reused under us)."""
    if not groups:
        return
    table = process_table()
    for group, started in groups:
        if group in table and table[group][2] == started:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
