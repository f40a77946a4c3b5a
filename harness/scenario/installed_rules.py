"""The two facts a scenario file is checked against that belong to packages above this one.

Whether an `expect:` key names a built-in target that can exist is the target
families' knowledge (harness.targets.expectation_name_problem); how many events
the fake API streams for a reply, which bounds a `cut_stream` fault's
`after_events`, is its Anthropic renderer's. Both packages import this one, so
each installs its rule here when it is imported, instead of the grammar
importing upwards; every entry point (the commands, the pytest plugin, a pool
worker) imports both before it reads a scenario, so every one of them refuses
the same files at load time.

Until a package installs its rule, the rule is fetched from it on first use
(`_installed_or_imported`), so no file is ever read unchecked.
"""

from __future__ import annotations

from typing import Callable

from harness.scenario.model import Block

TargetNameRule = Callable[[str], "str | None"]  # why a built-in target name cannot exist, or None
StreamedEvents = Callable[[tuple[Block, ...]], list[str]]  # a reply's blocks -> the SSE event names it streams

_installed: dict[str, Callable] = {}


def install_target_name_rule(rule: TargetNameRule) -> None:
    _installed["target_name"] = rule


def install_streamed_events(rule: StreamedEvents) -> None:
    _installed["streamed_events"] = rule


def target_name_problem(name: str) -> str | None:
    """Why an `expect:` key names a built-in target that cannot exist (it would never apply), or None."""
    return _installed_or_imported("target_name")(name)


def streamed_event_names(blocks: tuple[Block, ...]) -> list[str]:
    """The events a streamed reply with these blocks consists of, in order."""
    return _installed_or_imported("streamed_events")(blocks)


def _installed_or_imported(kind: str) -> Callable:
    rule = _installed.get(kind)
    if rule is not None:
        return rule
    if kind == "target_name":
        from harness.targets import expectation_name_problem

        return expectation_name_problem
    from harness.fakeapi.formats import anthropic
    from harness.fakeapi.script import blocks_of
    from harness.scenario.model import Turn

    return lambda blocks: anthropic.stream_event_names(blocks_of(Turn(blocks=blocks)))
