"""The obvious pydantic-ai design, for comparison: the durable prompt as SystemPromptParts, the headless text as an instruction.

pydantic-ai adds system prompts to a new conversation only and persists them in
its first request, so identity and body survive fresh processes; instructions
are re-rendered every run. Where each lands depends on the wire format.
"""

import uuid

from pydantic_ai import Agent

HEADLESS_TEXT = (
    "This is an unattended, non-interactive run. Never ask for confirmation, approval,\n"
    "clarification, or manual verification, including through tools or MCP servers. Use\n"
    "reasonable defaults, proceed autonomously, and validate with the tools available to\n"
    "you. State any assumptions or optional manual checks only in the final response."
)


def system_prompt_agent():
    agent = Agent(system_prompt=[f"You are System Pup (agent id {uuid.uuid4().hex[:12]}).", "Keep changes small."])

    @agent.instructions
    def headless() -> str:
        return HEADLESS_TEXT

    return agent
