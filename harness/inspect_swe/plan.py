"""A scenario as inspect_swe's claude_code() can live it: one sample, one session, one launch per step.

The harness does not launch Claude Code here; claude_code() does, and only in
the ways its loop knows. So each step kind maps onto something the task makes
it do, and anything it cannot be made to do is refused up front with the reason
(the run is an error, never a pass):

- launch: the sample's first turn (the caller's system message, then the prompt);
- retry after a step that answered: another attempt after an incorrect answer;
  the task's scorer calls that step's reply wrong, and the retry's prompt is
  the incorrect-answer message;
- retry after a step whose request the fake API failed: claude_code()'s
  uncaught-error retry, which re-sends the same prompt;
- resume: a second (third, ...) turn, a user message added between two runs of
  the same agent instance;
- compact: such a turn whose message is `/compact`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from harness.inspect_swe.agents import AGENTS, DEFAULT, agent_problems
from harness.scenario.model import Scenario, Step, TextBlock

COMPACT_PROMPT = "/compact"


@dataclass
class Plan:
    system: str | None  # the caller's system message (the scenario's appended text)
    turns: list[str] = field(default_factory=list)  # the user message of each run of the agent
    attempts: int = 1  # claude_code(attempts=...): launches per turn, counting incorrect-answer retries
    takes_attempts: bool = True  # the agent has an `attempts` parameter at all (antigravity() has none)
    incorrect_messages: list[str] = field(default_factory=list)  # in the order the retries happen
    wrong_answers: list[str] = field(default_factory=list)  # replies the scorer calls incorrect
    pin: bool = True  # inspect_swe's bridge-side system-prompt pin left in place
    cwd: str = ""
    agent: str = DEFAULT  # which inspect_swe agent the task runs (harness/inspect_swe/agents.py)
    cli_version: str = ""  # the CLI build's version, where the agent is told it (gemini_cli's install check)
    real_cli: list[str] = field(default_factory=list)  # that build's argv prefix, for a version probe not recorded
    replace: bool = False  # `system` goes as claude_code(replace_system_prompt=...), not as the sample's system message

    def to_json(self) -> dict:
        return asdict(self)


def prompt_of(step: Step) -> str:
    return COMPACT_PROMPT if step.kind == "compact" else (step.prompt or "")


def final_reply(step: Step) -> str | None:
    """The text of the step's last scripted reply: what the scorer sees as the answer."""
    if not step.turns or step.turns[-1].error is not None:
        return None
    text = "".join(block.text for block in step.turns[-1].blocks if isinstance(block, TextBlock)).strip()
    return text or None


def plan_of(scenario: Scenario, *, pin: bool, cwd: str, agent: str = DEFAULT) -> tuple[Plan, list[str]]:
    """The plan, and what in the scenario the launcher cannot express (empty when it can run it)."""
    plan = Plan(system=scenario.append, pin=pin, cwd=cwd, agent=agent, takes_attempts=AGENTS[agent].has_attempts)
    problems: list[str] = agent_problems(AGENTS[agent], scenario)
    changed = [step.index for step in scenario.steps if step.append is not None]
    if changed:
        problems.append(f"step {changed[0]} changes the caller's text: the sample's system messages are given once, "
                        f"before {agent}() first runs")
    if scenario.temporary or any(step.temporary for step in scenario.steps):
        problems.append(f"temporary text: {agent}() has no per-launch text besides the caller's system messages")
    attempts_in_turn = 1
    accepted: list[tuple[int, str]] = []
    for position, step in enumerate(scenario.steps):
        previous = scenario.steps[position - 1] if position else None
        where = f"step {step.index} ({step.kind})"
        if position and (step.edits or step.commit):
            problems.append(f"{where}: files changed between launches: the launches happen inside one eval")
        if step.kind == "launch" or previous is None:  # scenario files allow one launch, first
            plan.turns.append(prompt_of(step))
        elif step.kind in ("resume", "compact"):
            plan.turns.append(prompt_of(step))
            attempts_in_turn = 1
        elif previous.scripts_an_error:  # claude_code() retries a crashed launch with the same prompt
            if prompt_of(step) != prompt_of(previous):
                problems.append(f"{where}: an uncaught-error retry re-sends the failed step's prompt "
                                f"{prompt_of(previous)!r}, not {prompt_of(step)!r}")
        else:  # another attempt after an incorrect answer
            wrong = final_reply(previous)
            if wrong is None:
                problems.append(f"{where}: the step before it needs a scripted text reply, the answer the scorer calls wrong")
            else:
                plan.wrong_answers.append(wrong)
            plan.incorrect_messages.append(prompt_of(step))
            attempts_in_turn += 1
            plan.attempts = max(plan.attempts, attempts_in_turn)
        following = scenario.steps[position + 1] if position + 1 < len(scenario.steps) else None
        answer = final_reply(step)
        if answer is not None and not (following is not None and following.kind == "retry" and not step.scripts_an_error):
            accepted.append((step.index, answer))
    for index, answer in accepted:
        if answer in plan.wrong_answers:
            problems.append(f"step {index}: its reply {answer!r} is also a wrong answer elsewhere; the scorer could not tell them apart")
    return plan, problems
