"""inspect_swe's claude_code() as a target: `inspect-swe[@VERSION|@latest][+claude-code@X.Y.Z][+pin|+no-pin|+*][+checkout=PATH[#REV]]`.

The first seed's incident was in this launcher: the caller's system messages
went to Claude Code on a session's first launch only, and a bridge-side pin
hid that from the model until a compaction. So the name says everything a
verdict depends on: the release (its virtualenv: inspect-ai, inspect-swe and
the Anthropic SDK from the package index), the Claude Code build it launches,
whether the pin runs, and whether the launcher's code comes from a checkout
(a folder, or a git revision of it) so a fix can be judged against the
release ("fails on the release, passes on the branch").
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.errors import InputError
from harness.execution.launcher import LauncherSteps
from harness.inspect_swe.launcher import InspectLauncher, package_root
from harness.targets import claude_code
from harness.targets.base import SessionIdSource, Target
from harness.targets.family import SpecFamily, option_lines
from harness.targets.installs import VERSION_RE, pip_latest_version, pip_venv_dir

NAME = "inspect-swe"
PACKAGE = "inspect-swe"
# The eval framework and the SDK its Anthropic provider needs: for the measured release, the versions it was
# measured with (inspect-ai changes often); for any other, whatever pip resolves then (recorded in the tool folder).
MEASURED_COMPANIONS = ("inspect-ai==0.3.285", "anthropic==2.14.0")
COMPANIONS = ("inspect-ai", "anthropic")
LATEST = "latest"
# The release the scenarios' expectations and docs/findings/inspect-swe.md's table were measured on (the newest on 2026-11-30);
# `inspect-swe` alone means the newest release, whatever it is by then.
MEASURED_VERSION = "0.2.72"
PINS = {"pin": "inspect_swe's bridge-side system-prompt pin on, as released",
        "no-pin": "the pin switched off: the requests show what each launch sent"}
DEFAULT_PIN = "pin"
EVERY_PIN = "*"
STEP_TIMEOUT_S = 180.0  # one launch, as claude_code() runs it; the eval gets the sum and its own start-up


def targets(spec: str) -> list[Target]:
    version, claude_version, pins, checkout, revision = parse_spec(spec)
    if version == LATEST:
        version = pip_latest_version(PACKAGE)
    companions = MEASURED_COMPANIONS if version == MEASURED_VERSION else COMPANIONS
    venv = pip_venv_dir(NAME, PACKAGE, version, companions=companions)
    if not (venv / "bin" / "inspect").is_file():
        raise InputError(f"{NAME}@{version}: the install has no {venv / 'bin' / 'inspect'}; remove {venv.parent} to reinstall it")
    command = claude_code.cli_command(claude_version)
    commit = _commit(checkout, revision) if checkout is not None and revision is not None else None
    if checkout is not None and commit is None:
        package_root(checkout)
    return [build(version, claude_version, pin, venv, command, checkout, revision, commit) for pin in pins]


def parse_spec(spec: str) -> tuple[str, str, list[str], Path | None, str | None]:
    """Version, Claude Code version, pin variants, checkout folder and revision a spec names; nothing installed."""
    usage = (f"expected {NAME}[@VERSION|@latest][+claude-code@X.Y.Z][+pin|+no-pin|+*][+checkout=PATH[#REV]] "
             f"(e.g. {NAME}@0.2.72+claude-code@{claude_code.OLDER_VERSION}+no-pin)")
    head, _, rest = spec.partition("+")
    version = LATEST
    if head != NAME:
        if not head.startswith(NAME + "@") or not (head[len(NAME) + 1:] == LATEST or VERSION_RE.fullmatch(head[len(NAME) + 1:])):
            raise InputError(f"bad target {spec!r}: {usage}")
        version = head[len(NAME) + 1:]
    claude_version, pins, checkout, revision = claude_code.PINNED_VERSION, [DEFAULT_PIN], None, None
    checkout_part = None
    if "+checkout=" in "+" + rest:
        rest, _, checkout_part = ("+" + rest).partition("+checkout=")
        rest = rest[1:]
    for part in [p for p in rest.split("+") if p]:
        if part.startswith("claude-code@") and VERSION_RE.fullmatch(part[len("claude-code@"):]):
            claude_version = part[len("claude-code@"):]
        elif part in PINS:
            pins = [part]
        elif part == EVERY_PIN:
            pins = list(PINS)
        else:
            raise InputError(f"bad target {spec!r}: unknown part {part!r}; {usage}")
    if checkout_part is not None:
        path, _, revision = checkout_part.partition("#")
        if not path:
            raise InputError(f"bad target {spec!r}: +checkout= needs a folder; {usage}")
        checkout = Path(path).expanduser().resolve()
        if not checkout.is_dir():
            raise InputError(f"target {spec!r}: checkout folder {checkout} does not exist")
        revision = revision or None
    return version, claude_version, pins, checkout, revision


def name_problem(name: str) -> str | None:
    """Reports always name the release, the Claude Code build and the pin variant."""
    try:
        version, _, pins, _, _ = parse_spec(name)
    except InputError as exc:
        return str(exc)
    parts = name.split("+checkout=")[0].split("+")[1:]
    if version == LATEST or not any(p.startswith("claude-code@") for p in parts) or not any(p in PINS for p in parts):
        return f"target {name!r}: an {NAME} target is always named {NAME}@VERSION+claude-code@X.Y.Z+pin|no-pin[+checkout=...]"
    return None


def _commit(checkout: Path, revision: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--verify", "--quiet", revision + "^{commit}"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise InputError(f"{checkout}: no git revision {revision!r} (git rev-parse found no commit)")
    return done.stdout.strip()


def build(version: str, claude_version: str, pin: str, venv: Path, command: tuple[str, ...],
          checkout: Path | None, revision: str | None, commit: str | None) -> Target:
    name = f"{NAME}@{version}+claude-code@{claude_version}+{pin}"
    if checkout is not None:
        name += f"+checkout={checkout}" + (f"#{revision}" if revision else "")
    launcher = InspectLauncher(venv=venv, claude=command, pin=pin == "pin", checkout=checkout, revision=commit)
    return Target(
        name=name,
        commands={},
        session_id=SessionIdSource("stdout_json", "session_id"),  # unused: claude_code() keeps the session
        identity_regex=r"(?m)^You are [^\n]*",
        timeout_s=STEP_TIMEOUT_S,
        side_calls=claude_code.SIDE_CALLS,
        checkout=checkout,
        revision=commit,
        executor=LauncherSteps(launcher),
    )


FAMILY = SpecFamily(
    NAME, "'inspect-swe[@VERSION][+claude-code@X.Y.Z][+pin|+no-pin][+checkout=PATH[#REV]]'", targets, name_problem,
    lines=(f"{NAME}[@VERSION|@latest][+claude-code@X.Y.Z][+PIN][+checkout=PATH[#REV]]  inspect_swe's claude_code() in a real "
           f"`inspect eval` (default: the newest release; measured: {MEASURED_VERSION})",
           *option_lines(PINS, (DEFAULT_PIN,), "one target per pin setting"),
           "  +checkout=PATH[#REV]            the launcher's code from that folder, or that git revision of it"),
    defaults=(f"{NAME}@{MEASURED_VERSION}",),
)
