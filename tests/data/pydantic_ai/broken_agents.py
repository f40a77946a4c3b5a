"""Factories that are not usable as pydantic-ai targets, for the up-front checks (this module has no compact hook)."""

from pydantic_ai import Agent

NOT_A_FUNCTION = 42


def not_an_agent():
    return {"instructions": "You are not an agent."}


def raising_factory():
    raise RuntimeError("the factory could not read its configuration")


async def async_factory():
    return Agent(instructions="You are async.")


def plain_agent():
    """A usable agent, in a module without a compact hook."""
    return Agent(instructions="You are Plain Agent, a minimal pydantic-ai agent.")


def failing_agent():
    """An agent whose every run raises: a crash inside a step."""
    agent = Agent(instructions="You are Failing Agent.")

    @agent.output_validator
    def explode(output: str) -> str:
        raise RuntimeError("the agent crashed after the model answered")

    return agent
