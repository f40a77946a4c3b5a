"""`harness targets`: the built-in target families, their options, and the reference agent's defects."""

from __future__ import annotations

import argparse

from harness.commands.common import EXIT_OK


def add_parser(sub) -> None:
    sub.add_parser("targets", help="list the built-in targets, launch policies and the reference agent's defects")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.reference_agent.defects import DEFECT_DESCRIPTIONS
    from harness.targets import claude_code, code_puppy, inspect_swe

    print("reference                 the clean reference agent (shipped in this package)")
    for name, text in DEFECT_DESCRIPTIONS.items():
        print(f"reference:{name:<34} {text}")
    print("reference:*               the clean agent plus one target per defect")
    print("  +in-process                     after any reference spec: each step in the harness process through respx, not a subprocess")
    print(f"claude-code[@VERSION][+POLICY]  the real Claude Code CLI, installed on first use (pinned: {claude_code.PINNED_VERSION})")
    for policy, text in claude_code.POLICIES.items():
        default = " (default)" if policy == claude_code.DEFAULT_POLICY else ""
        print(f"  +{policy:<30} {text}{default}")
    print("  +*                              one target per policy")
    print(f"code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]  code-puppy from PyPI in its own virtualenv (pinned: {code_puppy.PINNED_VERSION})")
    for variant, text in {**code_puppy.FORMATS, **code_puppy.MEMORY}.items():
        default = " (default)" if variant in (code_puppy.DEFAULT_FORMAT, code_puppy.DEFAULT_MEMORY) else ""
        print(f"  +{variant:<30} {text}{default}")
    print("  +*                              one target per format and memory setting")
    print("pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]  your pydantic-ai agent, from a factory returning it")
    print("  +openai-chat (default), +openai-responses, +anthropic, +*   the wire format its model speaks")
    print("  +in-process                     each step in the harness process through respx, not a subprocess")
    print(f"inspect-swe[@VERSION|@latest][+claude-code@X.Y.Z][+PIN][+checkout=PATH[#REV]]  inspect_swe's claude_code() in a real "
          f"`inspect eval` (default: the newest release; measured: {inspect_swe.MEASURED_VERSION})")
    for variant, text in inspect_swe.PINS.items():
        default = " (default)" if variant == inspect_swe.DEFAULT_PIN else ""
        print(f"  +{variant:<30} {text}{default}")
    print("  +*                              one target per pin setting")
    print("  +checkout=PATH[#REV]            the launcher's code from that folder, or that git revision of it")
    for family in _agent_clis():
        print(f"{family.NAME}[@VERSION][+POLICY]  {family.__doc__.split(' as a target')[0]}, installed on first use "
              f"(pinned: {family.PINNED_VERSION}; policies as claude-code's)")
    print("PATH.yaml                 a target file describing any agent (see README)")
    return EXIT_OK


def _agent_clis() -> list:
    """The agent CLIs judged side by side with Claude Code under the same launch policies (issue 10)."""
    import importlib

    return [importlib.import_module(f"harness.targets.{m}") for m in ("codex", "gemini_cli", "qwen_code", "opencode")]
