"""The Claude Agent SDK for Python as a target: `claude-agent-sdk[@VERSION][+claude-code@X.Y.Z][+POLICY]`.

Its wheel bundles a Claude Code CLI (`claude_agent_sdk/_bundled/claude`, the
build named in `_bundled/claude.version`), which a caller runs unless it sets
`cli_path`. Each step is one `query()` in a fresh process of the SDK's own
virtualenv (harness/agent_sdk/python_step.py); harness/targets/agent_sdk.py
holds what it shares with the TypeScript SDK.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.targets.agent_sdk import AgentSDKFamily, Installed
from harness.targets.installs import install_record, pip_venv_dir

NAME = "claude-agent-sdk"
PACKAGE = "claude-agent-sdk"
PINNED_VERSION = "0.2.189"  # the newest on 2026-12-02, the release docs/findings/claude-agent-sdk.md measured
STEP_SCRIPT = Path(__file__).resolve().parent.parent / "agent_sdk" / "python_step.py"


def install(version: str) -> Installed:
    venv = pip_venv_dir(NAME, PACKAGE, version)
    bundled = sorted(venv.glob("lib/python*/site-packages/claude_agent_sdk/_bundled"))
    if not bundled or not (bundled[0] / "claude").is_file():
        raise InputError(f"{NAME}@{version}: its install in {venv} has no bundled CLI "
                         "(claude_agent_sdk/_bundled/claude); name one with +claude-code@X.Y.Z, or remove "
                         f"{venv.parent} to reinstall it")
    stated = (bundled[0] / "claude.version").read_text(encoding="utf-8").split() if (bundled[0] / "claude.version").is_file() else []
    if not stated:
        raise InputError(f"{NAME}@{version}: {bundled[0] / 'claude.version'} does not say which build it bundles")
    return Installed(step_command=(str(venv / "bin" / "python"), str(STEP_SCRIPT)), bundled_cli=bundled[0] / "claude",
                     bundled_version=stated[0], record=install_record(NAME, version))


FAMILY = AgentSDKFamily(NAME, PINNED_VERSION, summary="the Claude Agent SDK for Python, one query() per step",
                        install=lambda version: install(version), releases=("pypi", PACKAGE),
                        prompt_options=("--append-system-prompt", "--system-prompt", "--system-prompt-file"))
