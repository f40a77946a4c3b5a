"""The Claude Agent SDK for TypeScript as a target: `claude-agent-sdk-ts[@VERSION][+claude-code@X.Y.Z][+POLICY]`.

The npm package `@anthropic-ai/claude-agent-sdk` brings its CLI as a platform
package (`@anthropic-ai/claude-agent-sdk-linux-x64/claude`, the build its
package.json names as `claudeCodeVersion`). Each step is one `query()` in a
fresh `node` process running harness/agent_sdk/ts_step.mjs against the
installed release; harness/targets/agent_sdk.py holds what it shares with the
Python SDK.
"""

from __future__ import annotations

import json
import platform
import shutil
from pathlib import Path

from harness.errors import InputError
from harness.targets.agent_sdk import AgentSDKFamily, Installed
from harness.targets.installs import node_platform, npm_package_dir

NAME = "claude-agent-sdk-ts"
PACKAGE = "@anthropic-ai/claude-agent-sdk"
PINNED_VERSION = "0.3.328"  # the newest on 2026-12-02, the release docs/findings/claude-agent-sdk.md measured
STEP_SCRIPT = Path(__file__).resolve().parent.parent / "agent_sdk" / "ts_step.mjs"


def install(version: str) -> Installed:
    package = npm_package_dir(NAME, PACKAGE, version)
    node = shutil.which("node")
    if node is None:
        raise InputError(f"{NAME}@{version}: node is not on PATH to run the SDK")
    try:
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{NAME}@{version}: cannot read {package / 'package.json'}: {exc}") from None
    system, machine = node_platform()
    musl = "-musl" if system == "linux" and not platform.libc_ver()[0] else ""
    binary = package.parent / f"claude-agent-sdk-{system}-{machine}{musl}" / "claude"
    bundled = manifest.get("claudeCodeVersion")
    if not binary.is_file() or not isinstance(bundled, str):
        raise InputError(f"{NAME}@{version}: no bundled CLI for this platform ({binary}) or no claudeCodeVersion in "
                         f"its package.json; name one with +claude-code@X.Y.Z")
    return Installed(step_command=(node, str(STEP_SCRIPT), f"--sdk={package / manifest.get('main', 'sdk.mjs')}"),
                     bundled_cli=binary, bundled_version=bundled)


FAMILY = AgentSDKFamily(NAME, PINNED_VERSION, summary="the Claude Agent SDK for TypeScript, one query() per step",
                        install=lambda version: install(version), over_stdin=True, releases=("npm", PACKAGE),
                        prompt_options=("--append-system-prompt", "--system-prompt", "--system-prompt-file",
                                        "initialize.appendSystemPrompt", "initialize.systemPrompt"))
