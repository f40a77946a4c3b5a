"""Example Pup: a small code-puppy-like coding agent on pydantic-ai, in two builds.

`persisted_agent` keeps one conversation's contract across fresh processes:
its identity (an agent id minted once), the durable prompt body, the project
rules read from AGENTS.md and the recalled-notes fragment are fixed at the
conversation's first run and stored structurally in the history itself (the
first request's `metadata`, which pydantic-ai persists and never sends), then
rendered from there on every later run, whatever the process, the rules file
or the memory now say. The headless text is an instruction of its own after
the durable one, so it always ends the system text: outside the durable
prefix, droppable, and never part of a message.

`process_agent` is the seeds' bug, as a process-per-turn launcher meets it:
every process mints its own agent id, re-reads AGENTS.md, recalls notes that
grew since, and bakes the headless text into the prompt body ahead of the
rules, so identity, prefix and the temporary text's position all move.

Both render everything through pydantic-ai instructions (as code-puppy does),
never SystemPromptParts: in the OpenAI Responses format run-time instructions
travel in the `instructions` field, which the model reads before any system
message in `input`, so a persisted SystemPromptPart would put the durable text
after the temporary one there.

`compact(agent, messages)` is the compaction hook the harness's pydantic-ai
target calls for a compact step: it asks the model for a summary and replaces
the history with it, carrying the durable state over to the new first request.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

# code-puppy 0.0.946's headless instruction, byte for byte: added to every unattended run.
HEADLESS_TEXT = (
    "This is an unattended, non-interactive run. Never ask for confirmation, approval,\n"
    "clarification, or manual verification, including through tools or MCP servers. Use\n"
    "reasonable defaults, proceed autonomously, and validate with the tools available to\n"
    "you. State any assumptions or optional manual checks only in the final response."
)
# A working agent's durable instructions run to thousands of tokens (code-puppy's: about 1,000
# before its tools); this one is long enough for a provider to cache (1,024 tokens at least).
BODY = "\n".join([
    "You help with coding tasks in the user's project: read before you change, keep changes small,",
    "and explain what you did in a few sentences. Prefer the project's own tools and conventions.",
    "",
    "## How you work",
    *(f"- {rule}" for rule in [
        "Start by reading the files the task names, then the files they import, before proposing any change.",
        "Explore the directory layout before creating new files; put new code next to the code it belongs with.",
        "Keep each change as small as the task allows; a reviewer should be able to read the whole diff at once.",
        "Prefer editing an existing function over adding a parallel one; never leave two copies of one idea.",
        "Run the project's own test command after every change and read its output before you report success.",
        "When a test fails, read the failure message in full and fix the cause, not the assertion.",
        "Do not silence warnings, skip tests or widen timeouts to make a run pass; say what is wrong instead.",
        "Keep functions short and names descriptive; a comment explains why, never what the code already says.",
        "Handle errors where they can be handled and let the rest propagate with a message naming what failed.",
        "Never print, log or commit credentials, tokens or personal data, not even in test fixtures.",
        "Treat the user's working tree as theirs: no destructive git commands, no force pushes, no history rewrites.",
        "If the task is ambiguous, pick the most conservative reading, do it, and state the assumption at the end.",
        "When you add a dependency, pin its lower bound, say why it is needed, and prefer the standard library.",
        "Keep the public interface stable; when it must change, update every caller and the documentation with it.",
        "Write tests that fail without your change and pass with it; a test that cannot fail is worse than none.",
        "Measure before you optimize, and report figures as ratios taken in one run on the same machine.",
    ]),
    "",
    "## How you answer",
    *(f"- {rule}" for rule in [
        "Lead with the result: what changed, where, and how you checked it.",
        "Quote exact file paths, function names and commands so the user can follow them without searching.",
        "Keep explanations to a few sentences unless the user asks for more detail.",
        "List anything you could not verify, and anything you noticed but left alone, as separate short points.",
        "When you are unsure, say so plainly and name what would settle the question.",
        "Use code blocks only for code, commands and exact output; never for prose.",
        "Answer arithmetic and factual questions directly, in one line, without restating the question.",
    ]),
    "",
    "## Tools and files",
    *(f"- {rule}" for rule in [
        "Read files whole when they are short and in ranges when they are long; never guess at their contents.",
        "Search with patterns narrow enough to find the definition, then widen only if nothing matches.",
        "Create files only inside the project folder, with the project's line endings and encoding.",
        "Delete only files you created in this session, and say which ones you deleted.",
        "Shell commands run without a terminal: avoid interactive programs, pagers and prompts.",
        "Long-running commands get a timeout; report the timeout instead of waiting forever.",
        "Never reach the network except through the project's own package manager and registries.",
    ]),
    "",
    "## Reviews and commits",
    *(f"- {rule}" for rule in [
        "Before you call a task done, read your whole diff once more as a reviewer would, top to bottom.",
        "Look for code you wrote twice, names that no longer say what they hold, and comments that went stale.",
        "Commit in small steps, each with a message that says why the change was made, not only what changed.",
        "Keep unrelated fixes out of a change; note them for the user instead of folding them in silently.",
        "When a change touches behaviour users see, update the README or the help text in the same commit.",
        "If the project has a changelog, add a line a user would understand without reading the code.",
        "Never commit generated files, local configuration, caches or anything listed in the ignore file.",
        "After the last commit, run the full test suite once more from a clean state and report its figures.",
    ]),
])
# Anthropic caches nothing unless asked: a breakpoint on the last message caches the whole prompt
# up to it on every turn (OpenAI caches prompts by itself and ignores this setting).
CACHE_SETTINGS = {"anthropic_cache_messages": True}
STATE_KEY = "example_pup"  # ModelRequest.metadata key of the durable state
STATE_VERSION = 1
NOTES_FILE = Path(".example-pup") / "notes.jsonl"  # under HOME: the memory plugin's store
RECALLED_NOTES = 5
NOTE_CHARS = 240
COMPACTION_PROMPT = (
    "Summarize this conversation so far for a fresh start: what the user asked, what was answered and what is "
    "still open. Reply with the summary between <summary> and </summary> tags."
)
CONTINUATION = "This session is being continued from a previous conversation. Its summary:\n\n"
_SUMMARY = re.compile(r"<summary>\s*(.*?)\s*</summary>", re.S)


# ----------------------------------------------------------------- the pieces of the prompt


def mint_agent_id() -> str:
    return uuid.uuid4().hex[:12]


def read_rules() -> str:
    """The project's rules, from AGENTS.md in the working directory."""
    path = Path("AGENTS.md")
    return path.read_text(encoding="utf-8").strip() if path.is_file() else "No AGENTS.md in the working directory."


def recall_notes() -> str:
    """The memory plugin's recall: the last notes it wrote, in any earlier run."""
    path = Path.home() / NOTES_FILE
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    notes = [json.loads(line)["note"] for line in lines if line.strip()][-RECALLED_NOTES:]
    return "\n".join(f"- {note}" for note in notes) if notes else "none."


def remember(output: Any) -> Any:
    """The memory plugin's write: a note of each final answer (summaries of a compaction are not answers)."""
    text = str(output)
    if "<summary>" not in text:
        path = Path.home() / NOTES_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as notes:
            notes.write(json.dumps({"note": " ".join(text.split())[:NOTE_CHARS]}) + "\n")
    return output


def render(state: dict[str, Any]) -> str:
    return (
        f"You are Example Pup, a small coding agent built on pydantic-ai (agent id {state['agent_id']}).\n\n"
        f"{state['body']}\n\n## Project rules (AGENTS.md)\n\n{state['rules']}\n\n## Recalled notes\n\n{state['notes']}"
    )


def fresh_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "agent_id": mint_agent_id(), "body": BODY, "rules": read_rules(), "notes": recall_notes()}


# ----------------------------------------------------------------- the durable state in the history


def saved_state(messages: list[ModelMessage]) -> dict[str, Any] | None:
    first = next((m for m in messages if isinstance(m, ModelRequest)), None)
    state = (first.metadata or {}).get(STATE_KEY) if first is not None else None
    return state if isinstance(state, dict) and state.get("version") == STATE_VERSION else None


def durable_state(messages: list[ModelMessage], minted: dict[str, Any]) -> dict[str, Any]:
    """The conversation's state: restored from its first request, or made now and stored there.

    The first request is the one pydantic-ai has just added for a new
    conversation; its metadata is persisted with the history and never sent.
    """
    state = saved_state(messages)
    if state is not None:
        return state
    state = minted.setdefault("state", fresh_state())  # one state per run, however often instructions are rendered
    first = next((m for m in messages if isinstance(m, ModelRequest)), None)
    if first is not None:
        first.metadata = {**(first.metadata or {}), STATE_KEY: state}
    return state


# ----------------------------------------------------------------- the two builds


def persisted_agent() -> Agent:
    """Identity, body, rules and notes frozen at the first run and restored from the history."""
    agent = Agent(name="example-pup", model_settings=CACHE_SETTINGS)
    minted: dict[str, Any] = {}

    @agent.instructions
    def durable(ctx: RunContext[None]) -> str:
        return render(durable_state(ctx.messages, minted))

    @agent.instructions
    def headless() -> str:  # after the durable instruction: always the end of the system text
        return HEADLESS_TEXT

    @agent.output_validator
    def keep_notes(ctx: RunContext[None], output: str) -> str:
        durable_state(ctx.messages, minted)  # stored even if no instruction saw the first request
        return remember(output)

    return agent


def process_agent() -> Agent:
    """The seeds' bug: everything re-gathered by each process, the headless text frozen into the body."""
    state = fresh_state()
    prompt = render({**state, "body": f"{BODY}\n\n{HEADLESS_TEXT}"})
    agent = Agent(name="example-pup", instructions=prompt, model_settings=CACHE_SETTINGS)
    agent.output_validator(remember)
    return agent


# ----------------------------------------------------------------- compaction


async def compact(agent: Agent, messages: list[ModelMessage]) -> list[ModelMessage]:
    """Ask the model for a summary; the history becomes that summary, the durable state carried over."""
    result = await agent.run(COMPACTION_PROMPT, message_history=messages)
    text = str(result.output)
    match = _SUMMARY.search(text)
    summary = match.group(1) if match else text.strip()
    state = saved_state(messages)
    return [
        ModelRequest(parts=[UserPromptPart(CONTINUATION + summary)], metadata={STATE_KEY: state} if state else None),
        ModelResponse(parts=[TextPart("Understood. I will continue from this summary.")]),
    ]
