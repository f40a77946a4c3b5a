"""Google's Antigravity SDK, as inspect_swe's antigravity() runs it: not a target family of its own.

antigravity() starts one fresh process per agent call, `PYTHON
<HOME>/.antigravity-state/runner.py --config <HOME>/.antigravity-state/request.json`
(env HOME, NO_PROXY, PYTHONNOUSERSITE=1, GEMINI_API_KEY=inspect-bridge-unused).
The runner builds the SDK's LocalAgentConfig from request.json (the caller's
system messages are its `system_instructions`) and the SDK runs its bundled
engine (google/antigravity/bin/localharness), which speaks the Gemini wire
format to the Inspect bridge. PYTHON is the first of `/opt/venv/bin/python`,
`python3`, `python` that can `import google.antigravity`; failing all three,
antigravity() pip-installs google-antigravity==VERSION into
/var/tmp/.antigravity-sdk-venv, which needs the network. The harness installs
the pinned SDK (PyPI `google-antigravity`, Apache-2.0) into a virtualenv of
its own in the tools folder, and the task hands antigravity() that python
behind the recording shim (harness/inspect_swe/task_template.py).
"""

from __future__ import annotations

from harness.errors import InputError
from harness.targets.installs import pip_venv_dir

NAME = "google-antigravity"
PACKAGE = "google-antigravity"
PINNED_VERSION = "0.1.7"  # antigravity()'s own default `version` in inspect_swe 0.2.72


def cli_command(version: str) -> tuple[str]:
    """The python of the tools folder's virtualenv holding google-antigravity==version (installed on first use)."""
    venv = pip_venv_dir(NAME, PACKAGE, version)
    python = venv / "bin" / "python"
    engine = next(venv.glob("lib/python*/site-packages/google/antigravity/bin/localharness"), None)
    for path in (python, engine):
        if path is None or not path.is_file():
            raise InputError(f"{NAME}@{version}: the install in {venv} has no {path or 'google/antigravity/bin/localharness'}; "
                             f"remove {venv.parent} to reinstall it")
    return (str(python),)
