"""The Inspect task the harness runs for one scenario: copied beside its plan.json, run by `inspect eval`.

Never imported by the harness (it needs inspect-ai and inspect-swe, which live
in the target's own virtualenv). Everything scenario-specific is in plan.json
(harness/inspect_swe/plan.py says what each field means).
"""

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.agent import AgentAttempts, as_solver
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
from inspect_ai.solver import chain, solver

PLAN = json.loads(Path(__file__).with_name("plan.json").read_text(encoding="utf-8"))

if not PLAN["pin"]:
    # +no-pin: the bridge filter that puts the first launch's system prompt back into resumed requests is
    # replaced by the caller's own filter (none), so the requests show what each launch really sent.
    import inspect_swe._claude_code.claude_code as launcher_module

    if not hasattr(launcher_module, "pin_system_prompt_filter"):
        raise RuntimeError("+no-pin: this inspect_swe has no pin_system_prompt_filter to switch off")
    launcher_module.pin_system_prompt_filter = lambda session_id, user_filter: user_filter

from inspect_swe import claude_code  # noqa: E402 - after the pin switch, which claude_code() reads when called

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
    agent = claude_code(
        attempts=AgentAttempts(attempts=PLAN["attempts"], incorrect_message=incorrect_message),
        cwd=PLAN["cwd"],
    )
    solvers = [as_solver(agent)]
    for text in PLAN["turns"][1:]:
        solvers += [user_turn(text), as_solver(agent)]
    first = [ChatMessageSystem(content=PLAN["system"])] if PLAN["system"] is not None else []
    return Task(
        dataset=[Sample(input=[*first, ChatMessageUser(content=PLAN["turns"][0])], target="")],
        solver=chain(*solvers),
        scorer=scripted_answers(),
        sandbox="local",
    )
