"""Kimi Code's CLI, as inspect_swe's kimi_code() launches it: not a target family of its own.

kimi_code() downloads its binary from code.kimi.com (unreachable here); the
harness runs the npm build of the same CLI (`@moonshot-ai/kimi-code`, bin
`kimi`: one bundle, dist/main.mjs) under a Node.js that npm also provides:
the build needs node >= 22.19, and under an older node it stops at import.
`node-<os>-<cpu>` is Node's own binary published as an npm package.
"""

from __future__ import annotations

from harness.errors import InputError
from harness.journal.rules import RequestRule
from harness.targets.installs import node_platform, npm_package_dir

NAME = "kimi-code"
PACKAGE = "@moonshot-ai/kimi-code"
PINNED_VERSION = "2.1.0"
NODE_TOOL, NODE_VERSION = "kimi-code-node", "22.23.5"
# Its compaction request appends the summary instruction as a user message (inspect_swe's bridge merges it into
# the turn's Anthropic message): the fake API must know it to answer with the step's summary.
COMPACTION_CALLS = (RequestRule(prompt=r"You are about to run out of context\. Create a handoff summary"),)


def cli_command(version: str) -> tuple[str, str]:
    """Node.js 22 and Kimi Code's bundled CLI, both from npm (installed on first use)."""
    system, machine = node_platform()
    node = npm_package_dir(NODE_TOOL, f"node-{system}-{machine}", NODE_VERSION) / "bin" / "node"
    script = npm_package_dir(NAME, PACKAGE, version) / "dist" / "main.mjs"
    for path in (node, script):
        if not path.is_file():
            raise InputError(f"{NAME}@{version}: the install has no {path}; remove its folder to reinstall it")
    return str(node), str(script)
