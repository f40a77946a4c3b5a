"""Which machine and which revision a set of figures came from: without it a number means nothing.

docs/findings/benchmarks.md quotes the latest figures with this line; a reader comparing two
runs needs to know they ran the same code on comparable hardware, and how busy
the machine was (the load average before and after).
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def describe(checkout: Path) -> dict:
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": platform.platform(),
        "load_average_start": _load(),
        "git": git_revision(checkout),
    }


def machine_line(machine: dict) -> str:
    """One line for the findings page and the markdown table's header."""
    git = machine.get("git") or {}
    rev = (git.get("revision") or "unknown")[:12] + (" (with uncommitted changes)" if git.get("dirty") else "")
    return (f"{machine.get('cpu_model')}, {machine.get('usable_cores')} of {machine.get('cores')} cores, "
            f"Python {machine.get('python')}, {machine.get('os')}; revision {rev}")


def load_average() -> list[float] | None:
    return _load()


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision(checkout: Path) -> dict:
    """HEAD and whether the tree differs from it; read-only (no index refresh, no lock taken)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "--no-optional-locks", *args], cwd=checkout, capture_output=True,
                                  text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    revision = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"revision": revision, "dirty": bool(status) if status is not None else None}
