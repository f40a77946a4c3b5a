"""The reference agent as a target: `reference` is clean, `reference:DEFECT[,DEFECT]` switches defects on."""

from __future__ import annotations

from pathlib import Path

import harness
from harness.errors import InputError
from harness.reference_agent.defects import KNOWN_DEFECTS
from harness.targets.base import SessionIdSource, Target

NAME = "reference"
EVERY_DEFECT = "*"
_PACKAGE_ROOT = str(Path(harness.__file__).resolve().parent.parent)


def reference_target(spec: str) -> list[Target]:
    """`reference`, `reference:a,b` (both at once) or `reference:*` (clean plus one run per defect)."""
    _, _, defect_part = spec.partition(":")
    if defect_part == EVERY_DEFECT:
        return [build([])] + [build([d]) for d in KNOWN_DEFECTS]
    defects = [d.strip() for d in defect_part.split(",") if d.strip()] if defect_part else []
    for defect in defects:
        if defect not in KNOWN_DEFECTS:
            raise InputError(f"unknown reference defect {defect!r} in target {spec!r} (known: {', '.join(KNOWN_DEFECTS)})")
    return [build(defects)]


def build(defects: list[str]) -> Target:
    base = ["{python}", "-m", "harness.reference_agent", "--output-format", "json"]
    for defect in defects:
        base += ["--defect", defect]
    append = ["--append-system-prompt", "{append}"]
    # One argument, so a text that starts with a dash stays a value; the agent ignores it when empty.
    temporary = ["--temporary={temporary}"]
    return Target(
        name=NAME + (":" + ",".join(defects) if defects else ""),
        commands={
            "launch": tuple(base + ["-p", "{prompt}"] + append + temporary),
            "resume": tuple(base + ["-p", "{prompt}", "--resume", "{session_id}"] + append + temporary),
            # The caller's text on every launch, /compact's included: the reference is a correct launcher too.
            "compact": tuple(base + ["--compact", "--resume", "{session_id}"] + append),
        },
        session_id=SessionIdSource("stdout_json", "session_id"),
        identity_regex=r"(?m)^You are Reference Agent[^\n]*",
        timeout_s=60.0,
        # The agent is part of this package: make it importable from a source checkout too.
        env={"PYTHONPATH": _PACKAGE_ROOT},
    )
