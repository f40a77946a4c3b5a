"""The two facts a scenario file is checked against that belong to packages above this one.

Whether an `expect:` key names a built-in target that can exist is the target
families' knowledge (harness.targets.expectation_name_problem); how many events
the fake API streams for a reply, which bounds a `cut_stream` fault's
`after_events`, is its Anthropic renderer's. Both packages import this one, so
each installs its rule here when it is imported, instead of the grammar
importing upwards; every entry point (the commands, the pytest plugin, a pool
worker) imports both before it reads a scenario, so every one of them refuses
the same files at load time.

A rule not installed is a harness bug, never a file read unchecked: reading
then stops with a line naming the package that should have installed it.
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


_INSTALLED_BY = {"target_name": "harness.targets", "streamed_events": "harness.fakeapi.formats.anthropic"}


def _installed_or_imported(kind: str) -> Callable:
    rule = _installed.get(kind)
    if rule is None:
        raise RuntimeError(f"the scenario reader's {kind} rule is not installed: import {_INSTALLED_BY[kind]} "
                           "before reading a scenario")
    return rule
