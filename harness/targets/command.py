"""Target files: any agent described in YAML, run as argv templates per step kind.

This is the contract users write for their own launchers (see the README);
the whole file is validated up front, placeholders included, so a typo fails
with the file and line before any agent process starts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.fakeapi.core import SideCallRule
from harness.targets.base import COMMAND_KINDS, DEFAULT_IDENTITY, SESSION_ID_SOURCES, SessionIdSource, Target, validate_template
from harness.validation import Reader
from harness.yamlsource import LocatedDict, LocatedList, child_path, describe, item_path, load_located_file, unknown_key_error

PROTOCOLS = ("anthropic",)
_TOP_KEYS = ("name", "protocol", *COMMAND_KINDS, "session_id", "identity", "timeout_s", "env", "side_calls")
_SIDE_CALL_KEYS = ("model", "system", "prompt")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def load_target_file(path: str | Path) -> Target:
    path = Path(path)
    return _TargetReader(path).target(load_located_file(path))


class _TargetReader(Reader):
    def target(self, doc: Any) -> Target:
        if doc is None:
            raise self.error("empty file: expected a target mapping with name, launch, resume and session_id", 1, "")
        doc = self.mapping(doc, getattr(doc, "line", 1), "", "a target mapping")
        self.known_keys(doc, _TOP_KEYS, "")
        name = self.string(self.require(doc, "name", ""), doc.key_line("name"), "name", non_empty=True)
        protocol = self.optional_string(doc, "protocol", "") or "anthropic"
        if protocol not in PROTOCOLS:
            raise self.error(f"expected one of {', '.join(PROTOCOLS)}, got {protocol!r}", doc.key_line("protocol"), "protocol")
        commands = {}
        for kind in COMMAND_KINDS:
            if kind in ("launch", "resume"):
                self.require(doc, kind, "")
            if kind in doc:
                commands[kind] = self.argv(doc[kind], doc.key_line(kind), kind)
        timeout_s = 60.0
        if "timeout_s" in doc:
            timeout_s = self.positive_number(doc["timeout_s"], doc.key_line("timeout_s"), "timeout_s")
        return Target(
            name=name,
            protocol=protocol,
            commands=commands,
            session_id=self.session_id(self.require(doc, "session_id", ""), doc.key_line("session_id")),
            identity_regex=self.identity(doc),
            timeout_s=timeout_s,
            env=self.env(doc),
            target_dir=Path(self.path).resolve().parent,
            side_calls=self.side_calls(doc),
            source=Path(self.path),
        )

    def argv(self, value: Any, line: int | None, where: str) -> tuple[str, ...]:
        items = self.list_(value, line, where, "a non-empty list of command arguments")
        argv = []
        for i, item in enumerate(items):
            item_where = item_path(where, i)
            text = self.string(item, items.item_line(i), item_where)
            validate_template(text, item_where, self.path, items.item_line(i))
            argv.append(text)
        return tuple(argv)

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

    def env(self, doc: LocatedDict) -> dict[str, str]:
        if "env" not in doc:
            return {}
        m = self.mapping(doc["env"], doc.key_line("env"), "env", "a mapping of variable name -> value")
        env = {}
        for key, value in m.items():
            where = child_path("env", key)
            if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
                raise self.error(f"expected an environment variable name, got {describe(key)}", m.key_line(key), where)
            text = self.string(value, m.key_line(key), where)
            validate_template(text, where, self.path, m.key_line(key))
            env[key] = text
        return env

    def side_calls(self, doc: LocatedDict) -> tuple[SideCallRule, ...]:
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
            rules.append(SideCallRule(**patterns))
        return tuple(rules)

    def regex(self, text: str, line: int | None, where: str) -> str:
        try:
            re.compile(text)
        except re.error as exc:
            raise self.error(f"not a valid regular expression ({exc}): {text!r}", line, where) from None
        return text
