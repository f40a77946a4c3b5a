"""The Inspect task the harness runs for one scenario: copied beside its plan.json, run by `inspect eval`.

Never imported by the harness (it needs inspect-ai and inspect-swe, which live
in the target's own virtualenv). Everything scenario-specific is in plan.json
(harness/inspect_swe/plan.py says what each field means).
"""

import json
import os
import shutil
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.agent import AgentAttempts, as_solver
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
from inspect_ai.solver import chain, solver

PLAN = json.loads(Path(__file__).with_name("plan.json").read_text(encoding="utf-8"))

if not PLAN["pin"] and PLAN["agent"] == "claude_code":
    # +no-pin: the bridge filter that puts the first launch's system prompt back into resumed requests is
    # replaced by the caller's own filter (none), so the requests show what each launch really sent. A release
    # from before the pin has nothing to switch off (the harness read its module: InspectLauncher.problems).
    import inspect_swe._claude_code.claude_code as launcher_module

    if hasattr(launcher_module, "pin_system_prompt_filter"):
        launcher_module.pin_system_prompt_filter = lambda session_id, user_filter: user_filter

import inspect_swe  # noqa: E402 - after the pin switch, which claude_code() reads when called

AGENT = getattr(inspect_swe, PLAN["agent"])
OPTIONS = {}

if PLAN["agent"] == "codex_cli":
    # codex_cli() asks `codex --version` through the sandbox before the first launch: through the recording shim that
    # probe would be a launch (a step). It is answered as inspect_swe answers a probe that fails (no version), which
    # also keeps it from fetching the release's models.json from GitHub; model alignment uses its bundled snapshot.
    import inspect_swe._codex_cli.codex_cli as codex_module

    if not hasattr(codex_module, "codex_binary_version"):
        raise RuntimeError("codex_cli: this inspect_swe has no codex_binary_version to answer")

    async def _no_version(sandbox, binary, user=None):
        return None

    codex_module.codex_binary_version = _no_version
elif PLAN["agent"] == "gemini_cli":
    # gemini_cli() never looks on PATH: it runs $SANDBOX_INSTALL_DIR/gemini-cli/node_modules/.bin/gemini when
    # `node that --version` prints the version it was given, else installs one with npm. That path (in the run's
    # private /var/tmp) gets a node script that answers the probe from the real build, unrecorded, and hands every
    # other call to the recording shim, which is `gemini` on PATH.
    from inspect_swe._util.sandbox import SANDBOX_INSTALL_DIR

    _bin = Path(SANDBOX_INSTALL_DIR) / "gemini-cli" / "node_modules" / ".bin"
    _bin.mkdir(parents=True, exist_ok=True)
    _shim = shutil.which("gemini")
    if _shim is None:
        raise RuntimeError("gemini_cli: no recording shim named gemini on PATH")
    (_bin / "gemini").write_text(
        "#!/usr/bin/env node\n"
        "const { spawnSync } = require('child_process');\n"
        f"const real = {json.dumps(PLAN['real_cli'])}, shim = {json.dumps(_shim)};\n"
        "const args = process.argv.slice(2);\n"
        "const done = args.length === 1 && args[0] === '--version'\n"
        "  ? spawnSync(real[0], [...real.slice(1), ...args], { stdio: 'inherit' })\n"
        "  : spawnSync(shim, args, { stdio: 'inherit' });\n"
        "process.exit(done.status === null ? 1 : done.status);\n",
        encoding="utf-8")
    os.chmod(_bin / "gemini", 0o755)
    OPTIONS["version"] = PLAN["cli_version"]
elif PLAN["agent"] == "mini_swe_agent":
    # mini_swe_agent() downloads mini-swe-agent's wheels (and uv) unless told to use the sandbox's: then it runs
    # what `which mini` finds, the recording shim in front of the harness's own install.
    OPTIONS["version"] = "sandbox"
elif PLAN["agent"] == "antigravity":
    # antigravity() runs its runner with the first of /opt/venv/bin/python, python3, python that can import
    # google.antigravity, else pip-installs the SDK into /var/tmp (network). Inspect's local sandbox runs each probe
    # as a host subprocess: the missing /opt/venv/bin/python raises FileNotFoundError there (a container's exec
    # fails softly), and python3/python are the host's. A workaround of the local sandbox: the candidates become one
    # script in the run's private /var/tmp that answers antigravity()'s own import probe with the harness's SDK
    # python, unrecorded, and hands every other call (the runner's launch) to the recording shim on PATH.
    import shlex

    import inspect_swe._antigravity.agentbinary as antigravity_binary
    from inspect_swe._util.sandbox import SANDBOX_INSTALL_DIR

    if not hasattr(antigravity_binary, "_CANDIDATE_PYTHONS") or not hasattr(antigravity_binary, "_IMPORT_CHECK"):
        raise RuntimeError("antigravity: this inspect_swe has no _CANDIDATE_PYTHONS/_IMPORT_CHECK to point at the SDK")
    _shim = shutil.which("antigravity-python")
    if _shim is None:
        raise RuntimeError("antigravity: no recording shim named antigravity-python on PATH")
    _python = Path(SANDBOX_INSTALL_DIR) / "antigravity-sdk" / "python"
    _python.parent.mkdir(parents=True, exist_ok=True)
    _python.write_text(
        "#!/bin/sh\n"
        f'if [ "$#" -eq 2 ] && [ "$1" = -c ] && [ "$2" = {shlex.quote(antigravity_binary._IMPORT_CHECK)} ]; then\n'
        f'  exec {shlex.join(PLAN["real_cli"])} "$@"\n'
        "fi\n"
        f'exec {shlex.quote(_shim)} "$@"\n',
        encoding="utf-8")
    os.chmod(_python, 0o755)
    antigravity_binary._CANDIDATE_PYTHONS = (str(_python),)
    OPTIONS["version"] = PLAN["cli_version"]

_retries = list(PLAN["incorrect_messages"])


def last_answer(state) -> str:
    for message in reversed(state.messages):
        if isinstance(message, ChatMessageAssistant):
            return message.text.strip()
    return state.output.completion.strip()


@scorer(metrics=[accuracy()])
def scripted_answers():
    """Incorrect exactly for the replies the scenario follows with another attempt."""

    async def score(state, target):
        answer = last_answer(state)
        return Score(value=INCORRECT if answer in PLAN["wrong_answers"] else CORRECT, answer=answer)

    return score


async def incorrect_message(state, scores):
    if not _retries:
        raise RuntimeError("claude_code() asked for more incorrect-answer retries than the scenario has")
    return _retries.pop(0)


@solver
def user_turn(text):
    async def solve(state, generate):
        state.messages.append(ChatMessageUser(content=text))
        return state

    return solve


@task
def harness_scenario():
    if PLAN["takes_attempts"]:  # antigravity() has none (the plan refuses incorrect-answer retries for it)
        OPTIONS["attempts"] = AgentAttempts(attempts=PLAN["attempts"], incorrect_message=incorrect_message)
    if PLAN.get("replace"):  # +replace: the caller's text becomes Claude Code's whole system prompt (--system-prompt)
        OPTIONS["replace_system_prompt"] = PLAN["system"]
    agent = AGENT(cwd=PLAN["cwd"], **OPTIONS)
    solvers = [as_solver(agent)]
    for text in PLAN["turns"][1:]:
        solvers += [user_turn(text), as_solver(agent)]
    first = [ChatMessageSystem(content=PLAN["system"])] if PLAN["system"] is not None and not PLAN.get("replace") else []
    return Task(
        dataset=[Sample(input=[*first, ChatMessageUser(content=PLAN["turns"][0])], target="")],
        solver=chain(*solvers),
        scorer=scripted_answers(),
        sandbox="local",
    )
