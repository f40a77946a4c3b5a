"""mini-swe-agent's CLI, as inspect_swe's mini_swe_agent() launches it: not a target family of its own.

mini_swe_agent() installs the CLI from wheels it downloads (unreachable here)
unless told `version="sandbox"`, when it runs whatever `which mini` finds. The
harness installs the release's pinned build (`mini-swe-agent` from PyPI, bin
`mini`) into a virtualenv of its own in the tools folder, and the recording
shim named `mini` sits in front of it. mini talks to the model through litellm
(`MSWEA_MODEL_NAME` "anthropic/inspect", at the bridge), offering one `bash`
tool; a turn ends when a command it runs prints `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`
on its first line (`submit` in harness/inspect_swe/agents.py).
"""

from __future__ import annotations

from harness.errors import InputError
from harness.targets.installs import pip_venv_dir

NAME = "mini-swe-agent"
PACKAGE = "mini-swe-agent"
PINNED_VERSION = "2.2.3"  # inspect_swe 0.2.72's MINI_SWE_AGENT_SOURCE.default_version
# litellm reads its model price map from GitHub when imported, unless told to use the copy it ships.
# litellm's cost map from its own package (no download); and no cost tracking: the served model ("inspect") is in no
# cost map, which litellm as resolved with mini-swe-agent 2.2.3's upload (February 2026) refuses as an error.
OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_COST_TRACKING": "ignore_errors"}


def cli_binary(version: str) -> str:
    """The `mini` script of that version's virtualenv (installed on first use)."""
    mini = pip_venv_dir(NAME, PACKAGE, version) / "bin" / "mini"
    if not mini.is_file():
        raise InputError(f"{NAME}@{version}: the install has no {mini}; remove {mini.parents[2]} to reinstall it")
    return str(mini)
