"""One step of a conversation with a user's pydantic-ai agent, as a launcher would run it.

`python -m harness.pydantic_ai.driver --module M --function F --format FMT --kind KIND ...`

Every step calls the factory anew (a fresh agent object, as a fresh process of a
CLI would build), points it at the fake API in the chosen wire format with
`agent.override(model=...)`, restores the conversation the previous step
persisted, runs the step and persists `result.all_messages()` again; the
history file is pydantic-ai's own serialization (`ModelMessagesTypeAdapter`),
so what one step wrote is exactly what the next one's agent is handed.

The step's temporary text goes in as run-time `instructions=` for that run only,
as a function: pydantic-ai sorts literal instructions before computed ones, so a
plain string would land in front of the agent's own computed instructions and
inside the durable prefix, while a function keeps it after everything the agent
renders itself.

Requests are streamed (an event stream handler drains the events), as an
interactive agent's are. The same `run_step` serves the in-process mode, which
passes its own HTTP client (harness/fakeapi/inprocess.py) instead of sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import sys
import traceback
import uuid
from pathlib import Path
from typing import Any

from harness.pydantic_ai.loading import LoadError, build_agent, compact_hook, factory_of, load_module

FORMATS = ("openai-chat", "openai-responses", "anthropic")
KINDS = ("launch", "resume", "retry", "compact")
# Neutral names: the fake API answers any model; these pick pydantic-ai's plain profile for each family.
MODEL_NAMES = {"openai-chat": "gpt-harness-fake", "openai-responses": "gpt-harness-fake", "anthropic": "claude-harness-fake"}
SESSIONS_DIR = Path(".harness-pydantic-ai") / "sessions"  # under HOME


class StepError(Exception):
    """The step cannot run (no session to resume, no compact hook); exit code 2, message on stderr."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.pydantic_ai.driver", description=__doc__.splitlines()[0])
    p.add_argument("--module", required=True, help="dotted module, or path of a .py file")
    p.add_argument("--function", required=True, help="factory returning a pydantic_ai.Agent")
    p.add_argument("--search-path", default=None, help="folder a dotted module is imported from first")
    p.add_argument("--format", choices=FORMATS, required=True)
    p.add_argument("--kind", choices=KINDS, required=True)
    p.add_argument("--prompt", default="")
    p.add_argument("--temporary", default="", help="text for this run only; empty: none")
    p.add_argument("--session-id", default=None)
    p.add_argument("--base-url", required=True)
    p.add_argument("--api-key", required=True)
    return p


def session_file(session_id: str) -> Path:
    return Path.home() / SESSIONS_DIR / f"{session_id}.json"


def build_model(fmt: str, base_url: str, api_key: str, http_client: Any = None) -> Any:
    """The model the agent is overridden with: the fake API at `base_url`, in one wire format."""
    if fmt == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(MODEL_NAMES[fmt], provider=AnthropicProvider(base_url=base_url, api_key=api_key, http_client=http_client))
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url.rstrip("/") + "/v1", api_key=api_key, http_client=http_client)
    model_class = OpenAIChatModel if fmt == "openai-chat" else OpenAIResponsesModel
    return model_class(MODEL_NAMES[fmt], provider=provider)


def load_history(session_id: str) -> list[Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    path = session_file(session_id)
    if not path.is_file():
        raise StepError(f"no persisted conversation for session {session_id!r} (expected {path})")
    return list(ModelMessagesTypeAdapter.validate_json(path.read_bytes()))


def save_history(session_id: str, messages: list[Any]) -> Path:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    path = session_file(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(".tmp")
    scratch.write_bytes(ModelMessagesTypeAdapter.dump_json(messages, indent=1))
    os.replace(scratch, path)  # a step killed mid-write leaves the previous conversation intact
    return path


async def _drain(ctx: Any, events: Any) -> None:
    async for _ in events:
        pass


async def run_step(args: argparse.Namespace, http_client: Any = None) -> dict[str, Any]:
    """The step: restore, run (or compact), persist; returns what the driver prints."""
    module_obj = load_module(args.module, args.search_path)
    agent = build_agent(factory_of(module_obj, args.module, args.function), f"{args.module}:{args.function}")
    if args.kind == "launch":
        session_id, history = uuid.uuid4().hex, []
    else:
        if not args.session_id:
            raise StepError(f"a {args.kind} step needs --session-id")
        session_id, history = args.session_id, load_history(args.session_id)
    model = build_model(args.format, args.base_url, args.api_key, http_client)
    output: Any = None
    with agent.override(model=model):
        if args.kind == "compact":
            hook = compact_hook(module_obj)
            if hook is None:
                raise StepError(f"{args.module} defines no compact(agent, messages) hook")
            messages = hook(agent, history)
            if inspect.isawaitable(messages):
                messages = await messages
            messages = list(messages)
        else:
            temporary = args.temporary

            def step_instructions() -> str:
                return temporary

            result = await agent.run(
                args.prompt, message_history=history,
                instructions=step_instructions if temporary else None,
                event_stream_handler=_drain,
            )
            messages, output = list(result.all_messages()), result.output
    save_history(session_id, messages)
    return {"session_id": session_id, "kind": args.kind, "messages": len(messages),
            "output": output if isinstance(output, (str, type(None))) else repr(output)}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        summary = asyncio.run(run_step(args))
    except (StepError, LoadError) as exc:
        print(f"pydantic-ai driver: {exc}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        return 1
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
