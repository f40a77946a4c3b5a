"""The replay commands explore and minimize write are commands that work, for target files at a git revision too.

They used to print the target's display name (`--target 'my-agent@buggy'`), which the harness then refused as an
unknown target. Each test here runs the printed command itself.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from test_checkout_targets import SCENARIO, main_and_buggy, tools  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parent.parent


def harness(argv: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def replay_line(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if "Replay:" in line)
    return shlex.split(line.split("Replay:", 1)[1])


def test_minimize_on_a_target_file_at_a_revision_writes_a_replay_that_runs(tmp_path, tools):  # noqa: F811
    repo = main_and_buggy(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.replace("  - resume: {prompt: \"Add 5.\", reply: \"22.\"}\n",
                                         "  - resume: {prompt: \"Add 5.\", reply: \"22.\"}\n"
                                         "  - resume: {prompt: \"Add 1.\", reply: \"23.\"}\n"))
    env = {"HARNESS_TOOLS_DIR": str(tools), "TMPDIR": str(tmp_path)}
    done = harness(["minimize", "s.yaml", "--target", "agent-repo/target.yaml@buggy", "--quiet"], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "s.min.yaml").read_text()
    argv = replay_line(written)
    assert argv == ["harness", "run", "s.min.yaml", "--target", "agent-repo/target.yaml@buggy"], argv
    replayed = harness(argv[1:] + ["--report-dir", "r", "-q"], tmp_path, env)
    assert replayed.returncode == 1, replayed.stderr  # it runs, and fails as minimized: not "unknown target"
    assert "appended_exactly_once" in replayed.stdout


def test_explore_on_a_target_file_at_a_revision_prints_commands_that_run(tmp_path, tools):  # noqa: F811
    main_and_buggy(tmp_path)
    env = {"HARNESS_TOOLS_DIR": str(tools), "TMPDIR": str(tmp_path)}
    done = harness(["explore", "--target", "agent-repo/target.yaml@buggy", "--profile", "ci", "--examples", "8",
                    "--max-steps", "3", "--out", "found"], tmp_path, env)
    assert done.returncode == 1, done.stdout + done.stderr  # found: the buggy branch drops the text on resume
    (finding,) = (tmp_path / "found").glob("*.yaml")
    argv = replay_line(finding.read_text())
    assert argv[-2:] == ["--target", "agent-repo/target.yaml@buggy"], argv
    replayed = harness(argv[1:] + ["--report-dir", "r", "-q"], tmp_path, env)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    again = re.search(r"Found by: (.*)", finding.read_text()).group(1)
    assert "--target agent-repo/target.yaml@buggy" in again, again
