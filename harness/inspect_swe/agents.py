"""Which of inspect_swe's agents the eval runs, and what each one does with the caller's text, its retries and turns.

inspect_swe 0.2.72 ships one launcher per CLI. They share the sample loop
(attempts, turns) but each re-launches its CLI in its own way; read from the
release's source (site-packages/inspect_swe/_codex_cli, _gemini_cli, _opencode, _kimi_code, _mini_swe_agent,
_antigravity)
and checked against the launch and request journals:

| agent | found as | the caller's system messages go | incorrect-answer retry | next turn | failed launch |
|---|---|---|---|---|---|
| claude_code | `which claude` | `--append-system-prompt` (first launch only) | `--resume ID` | `--resume ID` | relaunched with the same prompt |
| codex_cli | `which codex`, then `codex --version` | `AGENTS.md` in the working folder, rewritten each turn | `exec ... PROMPT resume --last` | the same | raises: the sample fails |
| gemini_cli | `$INSTALL/gemini-cli/node_modules/.bin/gemini` (`node gemini --version` must equal the pinned version) | prefixed to the turn's prompt (argv) | `--resume latest`, the incorrect message alone | `--resume latest`, text + prompt | raises |
| opencode | `which opencode` | prefixed to the turn's prompt, on stdin | `--continue`, the incorrect message alone | `--continue`, text + prompt | raises |
| kimi_code | `which kimi` (else a download from code.kimi.com) | prefixed to the turn's prompt (argv, `-p`) | `--continue`, the incorrect message alone | `--continue`, text + prompt | raises |
| mini_swe_agent | `which mini` with `version="sandbox"` (else wheels it downloads) | `--task`: "System instructions:", the text, "Task:", the prompt (argv) | `MSWEA_RESUME=true`, `--task` the incorrect message alone | `MSWEA_RESUME=true`, text + prompt | raises |
| antigravity | the first of `/opt/venv/bin/python`, `python3`, `python` that imports google.antigravity (else a pip install) | request.json's `system_instructions`, read by `python runner.py --config request.json` | none: it takes no `attempts` | the saved conversation id, the sample's system messages again | raises |

mini-swe-agent 2.x (litellm, one `bash` tool) ends a turn only when the model
runs `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` through that tool; a text
reply is answered with a format error and another request, without end
(measured: 100 requests, then the fake API's refusal). A scenario whose steps
do not end on that tool call cannot be expressed for it (`submit`).

None of the six has a compaction command it could be made to send: a
`/compact` turn is text to the model (codex exec has no slash commands,
gemini_cli/opencode/kimi_code/mini_swe_agent prefix the caller's text to it, and
antigravity's SDK sends the prompt as a chat message), so a `compact`
step cannot be expressed; the CLIs' own compactions are set off by a step's
usage numbers. Only claude_code has the bridge-side system-prompt pin, so
`+pin`/`+no-pin` apply to it alone.

The launch checks read argv. Where an agent's launcher puts the caller's text
elsewhere (a file, stdin), the launch journal holds no trace of it and those
checks would judge bytes that never carry it: the scenario is "cannot
express" for that agent, with the reason, and its request checks are measured by the
scenarios in scenarios/inspect-swe-agents/ instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checks.launches import NAMES as LAUNCH_CHECKS
from harness.scenario.model import Scenario, Step, ToolUseBlock


@dataclass(frozen=True)
class Agent:
    name: str  # the inspect_swe function
    cli: str  # the harness family whose pinned builds it launches (the target name's `+CLI@VERSION`)
    binary: str  # the name the recording shim takes on PATH
    has_pin: bool  # the bridge-side system-prompt pin exists (claude_code only)
    text_goes: str  # "argv", or where else the launcher puts the caller's text
    retries_failed_launch: bool  # an uncaught error relaunches the CLI with the same prompt
    has_compaction: bool  # a `/compact` turn compacts
    prompt_flags: tuple[str, ...] = ()  # the CLI's system-prompt options as the launcher passes them
    # (tool, line): the CLI ends a turn only when the model calls that tool with a command printing that line;
    # a step whose last reply does not cannot end. None: a text reply ends the turn.
    submit: tuple[str, str] | None = None
    has_attempts: bool = True  # takes `attempts=` (incorrect-answer retries)


CLAUDE_CODE = Agent("claude_code", "claude-code", "claude", has_pin=True, text_goes="argv", retries_failed_launch=True,
                    has_compaction=True, prompt_flags=("--append-system-prompt", "--system-prompt"))
CODEX_CLI = Agent("codex_cli", "codex", "codex", has_pin=False,
                  text_goes="AGENTS.md in the working folder (written before the turn's first launch)",
                  retries_failed_launch=False, has_compaction=False)
GEMINI_CLI = Agent("gemini_cli", "gemini-cli", "gemini", has_pin=False, text_goes="argv", retries_failed_launch=False,
                   has_compaction=False)
OPENCODE = Agent("opencode", "opencode", "opencode", has_pin=False,
                 text_goes="the prompt on stdin (`opencode run` reads it there)", retries_failed_launch=False,
                 has_compaction=False)
KIMI_CODE = Agent("kimi_code", "kimi-code", "kimi", has_pin=False, text_goes="argv", retries_failed_launch=False,
                  has_compaction=False)
MINI_SWE_AGENT = Agent("mini_swe_agent", "mini-swe-agent", "mini", has_pin=False, text_goes="argv",
                       retries_failed_launch=False, has_compaction=False,
                       submit=("bash", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"))
ANTIGRAVITY = Agent("antigravity", "google-antigravity", "antigravity-python", has_pin=False,
                    text_goes="request.json (its `system_instructions`, which the runner reads)",
                    retries_failed_launch=False, has_compaction=False, has_attempts=False)
AGENTS = {agent.name: agent for agent in (CLAUDE_CODE, CODEX_CLI, GEMINI_CLI, OPENCODE, KIMI_CODE, MINI_SWE_AGENT, ANTIGRAVITY)}
DEFAULT = CLAUDE_CODE.name


def agent_problems(agent: Agent, scenario: Scenario) -> list[str]:
    """What in the scenario this agent's launcher cannot be made to do, beyond what every agent shares."""
    problems = []
    if agent.text_goes != "argv":
        judged = [name for name in scenario.checks if name in LAUNCH_CHECKS]
        if judged:
            problems.append(f"{', '.join(judged)} read(s) the launch's argv, and {agent.name}() passes the caller's text "
                            f"in {agent.text_goes}, which the launch journal does not record")
    for position, step in enumerate(scenario.steps):
        where = f"step {step.index} ({step.kind})"
        previous = scenario.steps[position - 1] if position else None
        if step.kind == "compact" and not agent.has_compaction:
            problems.append(f"{where}: {agent.name}() has no compaction command; a '/compact' turn reaches the model as text")
        if (previous is not None and previous.scripts_an_error and step.kind == "retry"
                and not agent.retries_failed_launch):
            problems.append(f"{where}: {agent.name}() does not relaunch after a failed launch, it raises and the sample fails")
        elif previous is not None and step.kind == "retry" and not agent.has_attempts:
            problems.append(f"{where}: {agent.name}() takes no `attempts`: it never retries after an incorrect answer")
    if agent.submit is not None:
        tool, command = agent.submit
        unended = [str(step.index) for step in scenario.steps
                   if step.kind != "compact" and step.error is None and not _submits(step, agent.submit)]
        if unended:
            problems.append(f"step(s) {', '.join(unended)}: the last reply does not call the {tool} tool with `{command}`, "
                            f"the only way {agent.cli} ends a turn (a text reply gets a format error and another "
                            f"request, without end; scenarios/inspect-swe-mini/isa-submit-*.yaml reply so)")
    return problems


def _submits(step: Step, submit: tuple[str, str]) -> bool:
    tool, command = submit
    last = step.turns[-1] if step.turns else None
    return last is not None and any(isinstance(block, ToolUseBlock) and block.name == tool
                                    and command in str(block.input.get("command", "")) for block in last.blocks)
