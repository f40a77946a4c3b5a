"""The `steps:` of a scenario file: one fresh agent process each, what it is sent and what the model answers.

A step is a mapping with one key, its kind (launch first, then resume, retry
or compact), holding the step's settings: the prompt, the replies (read by
harness/scenario/replies.py), the working-directory changes made before the
process starts, and what the scenario declares to the checks about the step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.documents.located import LocatedDict, LocatedList, child_path, describe, item_path, unknown_key_error
from harness.documents.reader import Reader
from harness.scenario.failures import FailureReader
from harness.scenario.model import SESSION_MODES, STEP_KINDS, Step, Turn
from harness.scenario.replies import ReplyReader

_WORKDIR_STEP_KEYS = ("edit", "commit")  # changes to the working directory before the step's process starts
_DECLARED_STEP_KEYS = ("temporary", "prefix_change")  # what the scenario tells the checks about this step
_PROMPT_STEP_KEYS = ("prompt", "reply", "error", "summary", "usage", "timeout_s", "session", "append", "interactive",
                     *_WORKDIR_STEP_KEYS, *_DECLARED_STEP_KEYS)
_COMPACT_STEP_KEYS = ("reply", "summary", "usage", "timeout_s", "session", "append", *_WORKDIR_STEP_KEYS,
                      *_DECLARED_STEP_KEYS)


class StepsReader:
    """Reads one item of `steps:` at a time; errors name ``file``'s path."""

    def __init__(self, file: Reader, replies: ReplyReader, failures: FailureReader):
        self.file = file
        self.replies = replies
        self.failures = failures

    def step(self, steps: LocatedList, i: int) -> Step:
        where = item_path("steps", i)
        line = steps.item_line(i)
        item = steps[i]
        kinds = ", ".join(STEP_KINDS)
        if isinstance(item, str) and item in STEP_KINDS:
            raise self.file.error(
                f"expected a mapping with one step kind ({kinds}), got {describe(item)}; write '{item}: {{}}'",
                line,
                where,
            )
        m = self.file.mapping(item, line, where, f"a mapping with one step kind ({kinds})")
        if not m:
            raise self.file.error(f"expected a mapping with one step kind ({kinds}), got an empty mapping", line, where)
        if len(m) > 1:
            keys = list(m)
            named = ", ".join(repr(k) for k in keys)
            kind_keys = [k for k in keys if k in STEP_KINDS]
            hint = ""
            if len(kind_keys) == 1:
                hint = f"; indent the step's settings under '{kind_keys[0]}:'"
            raise self.file.error(
                f"a step has exactly one key, its kind ({kinds}); got {named}{hint}",
                m.key_line(keys[1]),
                where,
            )
        (kind,) = m
        kind_line = m.key_line(kind)
        if kind not in STEP_KINDS:
            raise unknown_key_error(kind, STEP_KINDS, self.file.path, kind_line, where, what="step kind")
        where = child_path(where, kind)
        if i == 0 and kind != "launch":
            raise self.file.error(f"the first step must be 'launch', got {kind!r}", kind_line, where)
        if i > 0 and kind == "launch":
            raise self.file.error(
                "'launch' may only be the first step (one scenario is one session; "
                "continue it with 'resume' or 'retry')",
                kind_line,
                where,
            )

        body = m[kind]
        if body is None:
            body = LocatedDict(kind_line)
        body = self.file.mapping(body, kind_line, where, "a mapping of step settings (or nothing)")

        if kind == "compact":
            if "interactive" in body:
                raise self.file.error(
                    "'interactive' is not allowed on a compact step: an interactive step types its prompt into the "
                    "agent's terminal UI (launch, resume or retry)",
                    body.key_line("interactive"),
                    child_path(where, "interactive"),
                )
            if "prompt" in body:
                raise self.file.error(
                    "'prompt' is not allowed on a compact step: compaction sends no prompt "
                    f"(allowed: {', '.join(sorted(_COMPACT_STEP_KEYS))})",
                    body.key_line("prompt"),
                    where,
                )
            self.file.known_keys(body, _COMPACT_STEP_KEYS, where)
            prompt = None
        else:
            self.file.known_keys(body, _PROMPT_STEP_KEYS, where)
            prompt_value = self.file.require(body, "prompt", where)
            prompt = self.file.argument(prompt_value, body.key_line("prompt"), child_path(where, "prompt"))

        turns: tuple[Turn, ...] = ()
        if "reply" in body:
            turns = self.replies.reply(body["reply"], body.key_line("reply"), child_path(where, "reply"))
        error = None
        if "error" in body:
            if "reply" in body:
                raise self.file.error(
                    "a step has 'reply' (what the model says) or 'error' (every request of the step fails), not both; "
                    "for one failed request among replies, put '- error: {...}' in the reply list",
                    body.key_line("error"),
                    where,
                )
            error = self.failures.api_error(body["error"], body.key_line("error"), child_path(where, "error"))
        summary = self.file.optional_string(body, "summary", where)
        usage = None
        if "usage" in body:
            usage = self.replies.usage(body["usage"], body.key_line("usage"), child_path(where, "usage"))
        timeout_s = None
        if "timeout_s" in body:
            timeout_s = self.file.positive_number(body["timeout_s"], body.key_line("timeout_s"), child_path(where, "timeout_s"))
        edits: tuple[tuple[str, str], ...] = ()
        if "edit" in body:
            edits = self.edits(body["edit"], body.key_line("edit"), child_path(where, "edit"))
        commit = self.file.optional_argument(body, "commit", where, carried_as="it is git commit's message argument")
        temporary = self.file.optional_argument(body, "temporary", where)
        prefix_change = self.file.optional_string(body, "prefix_change", where, non_empty=True)
        if prefix_change is not None and i == 0:
            raise self.file.error(
                "the first step sets the prefix; 'prefix_change' declares a change at a later step",
                body.key_line("prefix_change"), child_path(where, "prefix_change"),
            )
        session = self._session(body, i, where)
        append = self._append(body, i, where)
        interactive = self._interactive(body, where)
        if append is not None and prefix_change is None:
            prefix_change = "the caller's text changes here (the step's `append`)"
        return Step(
            index=i + 1,
            kind=kind,
            prompt=prompt,
            turns=turns,
            summary=summary,
            usage=usage,
            timeout_s=timeout_s,
            line=line,
            edits=edits,
            commit=commit,
            error=error,
            temporary=temporary,
            prefix_change=prefix_change,
            session=session,
            append=append,
            interactive=interactive,
        )

    def _session(self, body: LocatedDict, i: int, where: str) -> str | None:
        """`session: continue|fork` on a later step: how it reaches the session, when not by its id."""
        mode = self.file.optional_string(body, "session", where, non_empty=True)
        if mode is None:
            return None
        line = body.key_line("session")
        if i == 0:
            raise self.file.error("the launch starts the session; 'session' says how a later step reaches it",
                                  line, child_path(where, "session"))
        if mode not in SESSION_MODES:
            raise unknown_key_error(mode, SESSION_MODES, self.file.path, line, child_path(where, "session"),
                                    what="session mode", listing="known")
        return mode

    def _append(self, body: LocatedDict, i: int, where: str) -> str | None:
        """`append: TEXT` on a later step: the caller passes this text from then on (a launcher's changed text)."""
        if "append" not in body:
            return None
        if i == 0:
            raise self.file.error("the launch passes the scenario's top-level `append`; a later step's `append` "
                                  "changes it", body.key_line("append"), child_path(where, "append"))
        return self.file.optional_argument(body, "append", where)

    def _interactive(self, body: LocatedDict, where: str) -> bool:
        """`interactive: true`: the step runs the agent's terminal UI in a pseudo-terminal instead of a headless turn."""
        if "interactive" not in body:
            return False
        value = body["interactive"]
        if not isinstance(value, bool):
            raise self.file.error(f"expected true or false, got {describe(value)}", body.key_line("interactive"),
                                  child_path(where, "interactive"))
        return value

    def edits(self, value: Any, line: int | None, where: str) -> tuple[tuple[str, str], ...]:
        """`edit: {relative/path: new content}`; paths stay inside the working directory."""
        m = self.file.mapping(value, line, where, "a mapping of relative file path -> new content")
        if not m:
            raise self.file.error("expected at least one file to write, got an empty mapping", line, where)
        out = []
        for name, content in m.items():
            key_where = child_path(where, str(name))
            key_line = m.key_line(name)
            if not isinstance(name, str) or not name.strip():
                raise self.file.error(f"expected a relative file path as key, got {describe(name)}", key_line, where)
            self.file.argument(name, key_line, key_where, carried_as="it is a file path")
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or ".." in parts or parts[0] == ".git":
                raise self.file.error(
                    f"expected a path inside the working directory (relative, no '..', not under .git), got {name!r}",
                    key_line,
                    key_where,
                )
            out.append((name, self.file.string(content, key_line, key_where)))
        return tuple(out)
