"""The target file's keys that say how to read the agent, not how to start it.

Split from harness/targets/target_file.py, which keeps the commands, the
environment and `repo:`; these keys touch no git and no placeholder, so each
is one mapping or list checked on its own, with the file, line and key path in
every error, as the rest of the file is.
"""

from __future__ import annotations

import re
from typing import Any

from harness.documents.located import LocatedDict, LocatedList, child_path, describe, item_path, unknown_key_error
from harness.documents.reader import Reader
from harness.journal.rules import RequestRule
from harness.scenario.failures import FailureReader
from harness.scenario.model import STEP_KINDS
from harness.scenario.replies import ReplyReader
from harness.targets.base import DEFAULT_IDENTITY, SESSION_ID_SOURCES, SessionIdSource

_SIDE_CALL_KEYS = ("model", "system", "prompt")
_TOOL_CALL_KEYS = ("name", "input")  # no `id`: explore calls the tool in many turns, each its own call


class TargetKeys(Reader):
    """Readers for `session_id`, `identity`, `steps_without_session_id`, `side_calls` and `tool_call`."""

    def session_id(self, value: Any, line: int | None) -> SessionIdSource:
        m = self.mapping(value, line, "session_id", f"a mapping with one of {', '.join(SESSION_ID_SOURCES)}")
        if len(m) != 1:
            raise self.error(f"expected exactly one of {', '.join(SESSION_ID_SOURCES)}, got {len(m)} keys", line, "session_id")
        (kind,) = m
        if kind not in SESSION_ID_SOURCES:
            raise unknown_key_error(kind, SESSION_ID_SOURCES, self.path, m.key_line(kind), "session_id")
        where = child_path("session_id", kind)
        text = self.string(m[kind], m.key_line(kind), where, non_empty=True)
        if kind == "stdout_regex":
            self.regex(text, m.key_line(kind), where)
        return SessionIdSource(kind, text)

    def identity(self, doc: LocatedDict) -> str:
        if "identity" not in doc:
            return DEFAULT_IDENTITY
        m = self.mapping(doc["identity"], doc.key_line("identity"), "identity", "a mapping with 'regex'")
        self.known_keys(m, ("regex",), "identity")
        text = self.string(self.require(m, "regex", "identity"), m.key_line("regex"), "identity.regex", non_empty=True)
        return self.regex(text, m.key_line("regex"), "identity.regex")

    def steps_without_session_id(self, doc: LocatedDict) -> frozenset[str]:
        """Step kinds whose output has no session id by the agent's design; every other step must print one."""
        if "steps_without_session_id" not in doc:
            return frozenset()
        where, line = "steps_without_session_id", doc.key_line("steps_without_session_id")
        items = self.list_(doc[where], line, where, f"a list of step kinds ({', '.join(STEP_KINDS[1:])})")
        kinds = set()
        for i, item in enumerate(items):
            kind = self.string(item, items.item_line(i), item_path(where, i))
            if kind not in STEP_KINDS[1:]:
                raise self.error(f"expected one of {', '.join(STEP_KINDS[1:])} (the launch must always print its "
                                 f"session id), got {kind!r}", items.item_line(i), item_path(where, i))
            kinds.add(kind)
        return frozenset(kinds)

    def side_calls(self, doc: LocatedDict) -> tuple[RequestRule, ...]:
        if "side_calls" not in doc:
            return ()
        items = doc["side_calls"]
        if not isinstance(items, LocatedList):
            raise self.error(f"expected a list of rules, got {describe(items)}", doc.key_line("side_calls"), "side_calls")
        rules = []
        for i, item in enumerate(items):
            where = item_path("side_calls", i)
            m = self.mapping(item, items.item_line(i), where, f"a mapping with some of {', '.join(_SIDE_CALL_KEYS)}")
            self.known_keys(m, _SIDE_CALL_KEYS, where)
            if not m:
                raise self.error(f"a rule needs at least one of {', '.join(_SIDE_CALL_KEYS)}", items.item_line(i), where)
            patterns = {
                key: self.regex(self.string(m[key], m.key_line(key), child_path(where, key)), m.key_line(key), child_path(where, key))
                for key in m
            }
            rules.append(RequestRule(**patterns))
        return tuple(rules)

    def tool_call(self, doc: LocatedDict) -> dict[str, Any] | None:
        """`tool_call: {name: NAME, input: {...}}`: one of the agent's own tools, for explore's tool-call turns.

        Read as a scenario's `tool_use` is (the scenario reader's own code), since that is
        what explore writes it into: a name that reader refuses would fail every sequence.
        """
        if "tool_call" not in doc:
            return None
        line, where = doc.key_line("tool_call"), "tool_call"
        m = self.mapping(doc[where], line, where, "a mapping with 'name' (one of the agent's own tools) and "
                                                  "optionally 'input' (its arguments)")
        self.known_keys(m, _TOOL_CALL_KEYS, where)
        block = ReplyReader(self, FailureReader(self)).tool_use(m, line, where)
        return {"name": block.name, "input": block.input}

    def regex(self, text: str, line: int | None, where: str) -> str:
        try:
            re.compile(text)
        except re.error as exc:
            raise self.error(f"not a valid regular expression ({exc}): {text!r}", line, where) from None
        return text
