"""What `harness init` would write, checked whole before a byte is written.

A team runs init in a repository it cares about, so it never overwrites: every
file it would create is looked at first, and one that exists (or a
pyproject.toml that already has the table) stops it with exit 2 and nothing
written at all, not half a setup to untangle. The two files it may share with
the team are only appended to: pyproject.toml (the table at its end, the rest
byte for byte as it was) and .gitignore (the lines it lacks).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.commands import init_ci, init_templates
from harness.config import OWN_FILE, PYPROJECT, Config, has_table
from harness.errors import InputError
from harness.targets.checkout import CheckoutError, open_repository

GITIGNORE = ".gitignore"
CONFIG_CHOICES = ("pyproject", OWN_FILE)


@dataclass(frozen=True)
class Planned:
    """One file init writes: created whole, or `text` appended to what is there."""

    path: Path
    text: str
    appends: bool = False
    note: str = ""  # what init says about it beside its name


@dataclass(frozen=True)
class Choices:
    folder: Path
    config: str | None  # "pyproject", "harness.toml", or None: pyproject.toml when there is one
    wire_format: str
    ci: str
    source: init_ci.HarnessSource | None  # None with ci "none"


def plan(choices: Choices) -> list[Planned]:
    """Every file init writes, in the order it says them; InputError naming the first that stands in the way."""
    folder = choices.folder
    if not folder.is_dir():
        raise InputError("no such folder (harness init writes into an existing folder)", folder)
    planned = [_configuration(folder, choices.config)]
    in_git = _in_git(folder)
    planned.append(Planned(folder / init_templates.TARGET_FILE, init_templates.target_file(choices.wire_format, in_git),
                           note=f"{choices.wire_format} wire format" + ("" if in_git else "; `repo:` off: not in git")))
    scenarios = folder / init_templates.SCENARIOS_DIR
    if os.path.lexists(scenarios) and not scenarios.is_dir():
        raise InputError("exists and is not a folder; harness init writes its starter scenarios there", scenarios)
    planned += [Planned(scenarios / name, text) for name, text in init_templates.SCENARIOS.items()]
    ci = _ci(choices)
    if ci is not None:
        planned.append(ci)
    gitignore = _gitignore(folder)
    if gitignore is not None:
        planned.append(gitignore)
    for item in planned:
        if not item.appends and os.path.lexists(item.path):
            raise InputError("already exists; harness init overwrites nothing, so it wrote nothing "
                             "(move the file away, or write that part by hand)", item.path)
    return planned


def write(planned: list[Planned]) -> None:
    """Create or append each file; a file created meanwhile by someone else is not overwritten either."""
    for item in planned:
        try:
            item.path.parent.mkdir(parents=True, exist_ok=True)
            with open(item.path, "a" if item.appends else "x", encoding="utf-8", newline="") as out:
                out.write(item.text)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", item.path) from None


def _configuration(folder: Path, choice: str | None) -> Planned:
    pyproject, own = folder / PYPROJECT, folder / OWN_FILE
    if choice is None:
        choice = "pyproject" if pyproject.is_file() else OWN_FILE
    if choice == OWN_FILE:
        if pyproject.is_file() and has_table(pyproject):
            raise InputError(f"already has a [tool.harness] table, which a new {OWN_FILE} would silently override; "
                             "harness init overwrites nothing, so it wrote nothing", pyproject)
        return Planned(own, init_templates.config_body(top_level=True))
    if os.path.lexists(own):
        raise InputError(f"exists, and would win over the [tool.harness] table harness init adds to {PYPROJECT}; "
                         "nothing was written (use --config harness.toml, or move the file away)", own)
    if not pyproject.exists():
        return Planned(pyproject, init_templates.config_body(top_level=False), note="with only [tool.harness]")
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}", pyproject) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"is not valid TOML ({exc}), so harness init cannot add [tool.harness] to it; "
                         "nothing was written", pyproject) from None
    tool = data.get("tool")
    if isinstance(tool, dict) and "harness" in tool:
        raise InputError("already has a [tool.harness] table; harness init overwrites nothing, so it wrote nothing",
                         pyproject)
    separator = ("" if text.endswith("\n") or not text else "\n") + ("\n" if text.strip() else "")
    addition = separator + init_templates.config_body(top_level=False)
    try:
        added = tomllib.loads(text + addition)
    except tomllib.TOMLDecodeError as exc:  # `tool = {...}` written inline cannot take another table
        raise InputError(f"cannot take a [tool.harness] table at its end ({exc}); add the table by hand "
                         "(docs/reference/configuration.md lists the keys); nothing was written", pyproject) from None
    assert isinstance(added.get("tool"), dict) and "harness" in added["tool"]
    return Planned(pyproject, addition, appends=True, note="[tool.harness] appended")


def _in_git(folder: Path) -> bool:
    """Whether `repo: .` would load: the target-file loader's own test of a repository."""
    try:
        open_repository(folder)
    except CheckoutError:
        return False
    return True


def _ci(choices: Choices) -> Planned | None:
    source, folder = choices.source, choices.folder
    target, scenarios = init_templates.TARGET_FILE, init_templates.SCENARIOS_DIR
    if choices.ci == "github":
        assert source is not None
        how = f"uses: {source.action}" if source.action else f"pip install {source.requirement}"
        return Planned(folder / init_ci.GITHUB_WORKFLOW, init_ci.github_workflow(source, target, scenarios), note=how)
    if choices.ci == "gitlab":
        assert source is not None
        return Planned(folder / init_ci.GITLAB_JOB, init_ci.gitlab_job(source, target, scenarios),
                       note=f"pip install {source.requirement}")
    return None


def _ignored_lines(folder: Path) -> list[str]:
    lines = [f"/{init_templates.REPORT_DIR}/"]
    tools = Config(folder=folder.resolve()).tools_folder()  # HARNESS_TOOLS_DIR, else the user's cache folder
    try:
        inside = tools.resolve().relative_to(folder.resolve())
    except ValueError:
        return lines
    if inside.parts:
        lines.append(f"/{inside.as_posix()}/")
    return lines


def _gitignore(folder: Path) -> Planned | None:
    path = folder / GITIGNORE
    text = ""
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}", path) from None
    present = {line.strip().strip("/") for line in text.splitlines()}
    missing = [line for line in _ignored_lines(folder) if line.strip("/") not in present]
    if not missing:
        return None
    lead = "" if not text or text.endswith("\n") else "\n"
    addition = lead + "# harness: what its runs write, never committed\n" + "".join(f"{line}\n" for line in missing)
    return Planned(path, addition, appends=True, note=f"added {', '.join(missing)}")
