"""`inspect eval` as the launcher of a scenario: the task written from the plan, run where nothing leaks out.

What each run gets: the task file and its plan.json in the run's folder; the
eval's model pointed at the fake API (Inspect's Anthropic provider, whose
requests carry what the bridge made of Claude Code's); the harness's own
Claude Code build found through PATH (behind the recording shim), so nothing is
downloaded; HOME, TMPDIR and a private /var/tmp inside the run's workspace;
and, for `+checkout=`, the launcher's code taken from that folder or git
revision ahead of the installed package (PYTHONPATH), its dependencies from
the release's virtualenv.

InspectLauncher is the ScenarioLauncher (harness/execution/launcher.py) that
the inspect-swe family's targets run their steps through (LauncherSteps).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.inspect_swe.agents import DEFAULT
from harness.inspect_swe.plan import plan_of
from harness.execution.launcher import LauncherCall, LauncherOutcome
from harness.scenario.model import Scenario
from harness.isolation.workspace import FAKE_API_KEY, Workspace

TEMPLATE = Path(__file__).with_name("task_template.py")
# The bridge-side system-prompt pin (`+pin`), and the module that applies it: the task template swaps it out for
# `+no-pin`, and a release without it (inspect_swe 0.2.70 and older) cannot be asked to pin.
PIN_FILTER = "pin_system_prompt_filter"
REPLACE_PARAMETER = "replace_system_prompt"  # claude_code()'s, from 0.2.68 on (`+replace`)
LAUNCHER_MODULE = "inspect_swe/_claude_code/claude_code.py"
PRIVATE_VAR_TMP = Path("/var/tmp")  # where Inspect's local sandbox puts its tools and bridge services
# The pinned Claude Code's own default model: claude_code() presents the served model to the CLI, and its context
# window (so when it compacts by itself) follows the name; with claude-sonnet-4-5, 2.1.332 never auto-compacts.
EVAL_MODEL = "anthropic/claude-opus-5-5"


@dataclass(frozen=True)
class InspectLauncher:
    venv: Path
    claude: tuple[str, ...]  # argv prefix of the real CLI build the agent launches (Claude Code's, by default)
    pin: bool
    checkout: Path | None = None  # a folder holding inspect_swe's source (its repository, or src/)
    revision: str | None = None  # a commit of that repository, when the launcher comes from git
    name: str = "inspect eval"
    binary: str = "claude"  # the name the agent finds its CLI by (the recording shim's)
    agent: str = DEFAULT  # which inspect_swe agent runs (harness/inspect_swe/agents.py)
    cli_version: str = ""  # that CLI build's version
    env: tuple[tuple[str, str], ...] = ()  # the CLI's offline switches, for the eval (and so the agent) to inherit
    path: tuple[str, ...] = ()  # folders the agent's setup looks for its helpers in (ripgrep for opencode)
    home_files: tuple[tuple[str, str], ...] = ()  # HOME-relative path -> text, written before the eval
    replace: bool = False  # the scenario's text as claude_code(replace_system_prompt=...), not a system message

    def real_binary(self) -> list[str]:
        return list(self.claude)

    def describe(self) -> str:
        agent = "" if self.agent == DEFAULT else f"{self.agent}() "
        return f"{self.venv / 'bin' / 'inspect'} eval, {agent}launching {self.claude[-1]}"

    def session_of(self, argv: list[str]) -> str | None:
        """claude_code() names the session on every launch: --session-id first, --resume after; gemini_cli()
        resumes `latest`, codex_cli() `--last` and opencode() `--continue`: no id in argv."""
        for flag in ("--resume", "--session-id"):
            if flag in argv[:-1] and argv[argv.index(flag) + 1] != "latest":
                return argv[argv.index(flag) + 1]
        return None

    def problems(self, scenario: Scenario) -> list[str]:
        problems = plan_of(scenario, pin=self.pin, cwd="", agent=self.agent)[1]
        if self.agent == DEFAULT and self.pin and has_pin_filter(self.venv, self.checkout, self.revision) is False:
            problems.insert(0, f"+pin: this inspect_swe has no bridge-side system-prompt pin ({PIN_FILTER} is not in its "
                               f"{LAUNCHER_MODULE}); +no-pin runs it as released")
        if self.replace and launcher_mentions(self.venv, self.checkout, self.revision, REPLACE_PARAMETER) is False:
            problems.insert(0, f"+replace: this inspect_swe's claude_code() has no {REPLACE_PARAMETER} parameter "
                               f"(not in its {LAUNCHER_MODULE}; it arrived in 0.2.68)")
        return problems

    def prepare(self, scenario: Scenario, workspace: Workspace, base_url: str) -> LauncherCall:
        if workspace.root.resolve().is_relative_to(PRIVATE_VAR_TMP):
            raise InputError(f"the run's workspace {workspace.root} is under {PRIVATE_VAR_TMP}, which the eval gets a "
                             f"private copy of and so could not see; point TMPDIR elsewhere")
        folder = workspace.root / "inspect"
        folder.mkdir(parents=True, exist_ok=True)
        plan, _ = plan_of(scenario, pin=self.pin, cwd=str(workspace.workdir), agent=self.agent)
        plan.cli_version, plan.real_cli, plan.replace = self.cli_version, list(self.claude), self.replace
        for relative, text in self.home_files:
            (workspace.home / relative).parent.mkdir(parents=True, exist_ok=True)
            (workspace.home / relative).write_text(text, encoding="utf-8")
        (folder / "plan.json").write_text(json.dumps(plan.to_json(), indent=2), encoding="utf-8")
        shutil.copyfile(TEMPLATE, folder / "task.py")
        env = {**dict(self.env), "PATH": os.pathsep.join([str(self.venv / "bin"), *self.path, os.environ.get("PATH", "")]),
               "INSPECT_LOG_DIR": str(folder / "logs"), "PYTHONDONTWRITEBYTECODE": "1"}
        source = self._source(workspace)
        if source is not None:
            env["PYTHONPATH"] = str(source)
        private = workspace.root / "var-tmp"
        private.mkdir(exist_ok=True)
        # TMPDIR inside the private /var/tmp: the sandbox tools server of Inspect 0.3.234-0.3.255 (tools v18) binds
        # TMPDIR/sandbox-tools/sandbox-tools.sock, which under the workspace's own tmp is longer than the 107 bytes
        # AF_UNIX allows ("OSError: AF_UNIX path too long"), so those releases never got to launch.
        (private / "tmp").mkdir(exist_ok=True)
        env["TMPDIR"] = str(PRIVATE_VAR_TMP / "tmp")
        argv = [str(self.venv / "bin" / "inspect"), "eval", "task.py",  # Inspect takes task files relative to its folder
                "--model", EVAL_MODEL, "--model-base-url", base_url, "-M", f"api_key={FAKE_API_KEY}",
                "--log-dir", str(folder / "logs"), "--log-format", "json", "--display", "plain"]
        return LauncherCall(argv=argv, env=env, cwd=folder, private_dirs={str(PRIVATE_VAR_TMP): private})

    def _source(self, workspace: Workspace) -> Path | None:
        """The folder to put first on PYTHONPATH, holding the launcher's inspect_swe package."""
        if self.checkout is None:
            return None
        root = self.checkout
        if self.revision is not None:
            root = workspace.root / "launcher-source"
            root.mkdir(exist_ok=True)
            archive = subprocess.run(["git", "-C", str(self.checkout), "archive", self.revision],
                                     capture_output=True, timeout=120)
            if archive.returncode != 0:
                raise InputError(f"git archive {self.revision} in {self.checkout}: {archive.stderr.decode(errors='replace').strip()}")
            subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True, timeout=120)
        return package_root(root)

    def outcome(self, workspace: Workspace) -> LauncherOutcome:
        logs = sorted((workspace.root / "inspect" / "logs").glob("*.json"))
        if not logs:
            return LauncherOutcome(error="the eval wrote no log")
        try:
            log = json.loads(logs[-1].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            return LauncherOutcome(error=f"cannot read the eval log {logs[-1].name}: {exc}")
        status = log.get("status")
        notes = [f"eval status {status}, log {logs[-1].name}"]
        samples = log.get("samples") or []
        for sample in samples:
            for name, score in (sample.get("scores") or {}).items():
                notes.append(f"sample scored {score.get('value')} by {name} (answer {score.get('answer')!r})")
            if sample.get("error"):
                return LauncherOutcome(error=f"the sample failed: {_first_line(sample['error'])}", notes=notes)
        if status != "success":
            return LauncherOutcome(error=f"the eval ended with status {status}: {_first_line(log.get('error') or {})}", notes=notes)
        return LauncherOutcome(notes=notes)


def has_pin_filter(venv: Path, checkout: Path | None, revision: str | None) -> bool | None:
    """Whether the launcher's code that will run has the pin, read from that code rather than a list of releases
    (it arrived in 0.2.71, and a checkout may have it at any commit). None: the module is not where it was."""
    return launcher_mentions(venv, checkout, revision, PIN_FILTER)


@functools.lru_cache(maxsize=None)
def launcher_mentions(venv: Path, checkout: Path | None, revision: str | None, word: str) -> bool | None:
    """Whether claude_code()'s module in the code that will run names `word` (the pin filter, replace_system_prompt).
    None: the module is not where it was."""
    text = None
    if checkout is not None and revision is not None:
        for prefix in ("src/", ""):
            shown = subprocess.run(["git", "-C", str(checkout), "show", f"{revision}:{prefix}{LAUNCHER_MODULE}"],
                                   capture_output=True, text=True, timeout=60)
            if shown.returncode == 0:
                text = shown.stdout
                break
    else:
        roots = [package_root(checkout)] if checkout is not None else sorted(venv.glob("lib/python*/site-packages"))
        found = [root / LAUNCHER_MODULE for root in roots if (root / LAUNCHER_MODULE).is_file()]
        text = found[0].read_text(encoding="utf-8", errors="replace") if found else None
    return None if text is None else re.search(rf"\b{re.escape(word)}\b", text) is not None


def package_root(root: Path) -> Path:
    """`root/src` in a repository laid out like inspect_swe's, else root itself; it must hold inspect_swe."""
    for candidate in (root / "src", root):
        if (candidate / "inspect_swe" / "__init__.py").is_file():
            return candidate
    raise InputError(f"{root} holds no inspect_swe package (looked for src/inspect_swe and inspect_swe)")


def _first_line(error: dict) -> str:
    message = str(error.get("message") or "no message")
    return message.strip().splitlines()[0][:400] if message.strip() else "no message"
