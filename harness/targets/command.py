"""Target files: any agent described in YAML, run as argv templates per step kind.

This is the contract users write for their own launchers (see the README);
the whole file is validated up front, placeholders included, so a typo fails
with the file and line before any agent process starts.

`repo:` (and `rev:`) name the agent's own code in git: the file is validated
first, then the revision is prepared (harness.targets.checkout) and `{checkout}`
points at it; the target's name carries the revision, so two revisions of one
file are two targets in every report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.fakeapi.core import RequestRule
from harness.targets.base import (
    COMMAND_KINDS,
    DEFAULT_IDENTITY,
    SESSION_ID_SOURCES,
    SessionIdSource,
    Target,
    template_fields,
    validate_template,
)
from harness.validation import Reader
from harness.yamlsource import LocatedDict, LocatedList, child_path, describe, item_path, load_located_file, unknown_key_error

PROTOCOLS = ("anthropic",)
_TOP_KEYS = ("name", "protocol", "repo", "rev", *COMMAND_KINDS, "session_id", "identity", "timeout_s", "env", "side_calls")
WORKING_TREE = "working-tree"  # the name suffix of a `repo:` target run from the folder as it is
_SIDE_CALL_KEYS = ("model", "system", "prompt")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def load_target_file(path: str | Path, rev: str | None = None) -> Target:
    """The target a file describes; `rev` (from a `FILE@REV` spec) overrides the file's `rev:`."""
    path = Path(path)
    return _TargetReader(path, rev).target(load_located_file(path))


class _TargetReader(Reader):
    def __init__(self, path: Path, rev_override: str | None = None):
        super().__init__(path)
        self.rev_override = rev_override
        self.has_repo = False

    def target(self, doc: Any) -> Target:
        if doc is None:
            raise self.error("empty file: expected a target mapping with name, launch, resume and session_id", 1, "")
        doc = self.mapping(doc, getattr(doc, "line", 1), "", "a target mapping")
        self.known_keys(doc, _TOP_KEYS, "")
        name = self.string(self.require(doc, "name", ""), doc.key_line("name"), "name", non_empty=True)
        repo, rev = self.repo_and_rev(doc)
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
        session_id = self.session_id(self.require(doc, "session_id", ""), doc.key_line("session_id"))
        identity_regex = self.identity(doc)
        env = self.env(doc)
        side_calls = self.side_calls(doc)
        # Only a file valid throughout reaches git: a typo never costs a checkout.
        checkout, revision = None, None
        if repo is not None:
            checkout, revision = self.checkout(doc, repo, rev)
            name = f"{name}@{rev if rev is not None else WORKING_TREE}"
        return Target(
            name=name,
            protocol=protocol,
            commands=commands,
            session_id=session_id,
            identity_regex=identity_regex,
            timeout_s=timeout_s,
            env=env,
            target_dir=Path(self.path).resolve().parent,
            side_calls=side_calls,
            source=Path(self.path),
            checkout=checkout,
            revision=revision,
        )

    def repo_and_rev(self, doc: LocatedDict) -> tuple[Path | None, str | None]:
        """`repo:` as an absolute path (relative to the file's folder) and the revision asked for, if any."""
        repo = None
        text = self.optional_string(doc, "repo", "", non_empty=True)
        if text is not None:
            repo = (Path(self.path).resolve().parent / Path(text).expanduser()).resolve()
        rev = self.optional_string(doc, "rev", "", non_empty=True)
        if rev is not None and repo is None:
            raise self.error(
                "needs `repo:`, the git repository to check the revision out of (relative paths are relative to the "
                "target file's folder)", doc.key_line("rev"), "rev",
            )
        if self.rev_override is not None:
            if repo is None:
                raise InputError(
                    f"the target spec '{self.path}@{self.rev_override}' names a revision, but this target file has no "
                    "`repo:` to check it out of; add `repo: PATH` (the agent's git repository) to the file, or drop "
                    f"'@{self.rev_override}'",
                    self.path,
                )
            rev = self.rev_override
        self.has_repo = repo is not None
        return repo, rev

    def checkout(self, doc: LocatedDict, repo: Path, rev: str | None) -> tuple[Path, str | None]:
        from harness.targets import checkout

        from_spec = self.rev_override is not None
        try:
            repository = checkout.open_repository(repo)
            if rev is None:
                return repository.path, None
            return checkout.prepare_revision(repository, rev)
        except checkout.CheckoutError as exc:
            if exc.key == "repo":
                raise self.error(exc.message, doc.key_line("repo"), "repo") from None
            if from_spec:  # the revision came from `FILE@REV`, not from a line of the file
                raise InputError(f"@{rev} (from the target spec): {exc.message}", self.path) from None
            raise self.error(exc.message, doc.key_line("rev"), "rev") from None

    def argv(self, value: Any, line: int | None, where: str) -> tuple[str, ...]:
        items = self.list_(value, line, where, "a non-empty list of command arguments")
        argv = []
        for i, item in enumerate(items):
            item_where = item_path(where, i)
            text = self.string(item, items.item_line(i), item_where)
            self.template(text, items.item_line(i), item_where)
            argv.append(text)
        return tuple(argv)

    def template(self, text: str, line: int | None, where: str) -> None:
        validate_template(text, where, self.path, line)
        if "checkout" in template_fields(text) and not self.has_repo:
            raise self.error(
                f"{{checkout}} in {text!r} is the agent's code checked out from `repo:`, and this file has no `repo:`; "
                "add `repo: PATH` (and `rev: REV`), or use {target_dir} for the target file's folder",
                line, where,
            )

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
            self.template(text, m.key_line(key), where)
            env[key] = text
        return env

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

    def regex(self, text: str, line: int | None, where: str) -> str:
        try:
            re.compile(text)
        except re.error as exc:
            raise self.error(f"not a valid regular expression ({exc}): {text!r}", line, where) from None
        return text
