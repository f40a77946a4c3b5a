#!/usr/bin/env bash
# The harness goes into a virtual environment of its own under $RUNNER_TEMP, never into the runner's Python: a
# distribution's externally managed Python refuses pip, and the project's own packages stay out of the gate's way.
# Outputs: python= (that environment's interpreter) and harness= (its command), for the steps after this one.
set -euo pipefail

requirement=${HARNESS_REQUIREMENT:-${GITHUB_ACTION_PATH:?harness gate: GITHUB_ACTION_PATH is not set}}
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/launcher-harness-gate"

python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement"
"$venv/bin/harness" --version
{
  echo "python=$venv/bin/python"
  echo "harness=$venv/bin/harness"
} >> "${GITHUB_OUTPUT:-/dev/null}"
