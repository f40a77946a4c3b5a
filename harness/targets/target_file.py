"""Target files: any agent described in YAML, run as argv templates per step kind.

This is the contract users write for their own launchers (see the README);
the whole file is validated up front, placeholders included, so a typo fails
with the file and line before any agent process starts.

`repo:` (and `rev:`) name the agent's own code in git: the file is validated
first, then the revision is prepared (harness.targets.checkout) and `{checkout}`
points at it; the target's name carries the revision, so two revisions of one
file are two targets in every report. `FILE@REV` reads the file itself at REV
when it lies in that repository (harness.targets.file_at_revision), and every
command must run something of the checkout: a revision whose code nothing
reaches would be the same program on both sides of a comparison.

The keys that say how to read the agent rather than start it (its session id,
identity line, side calls, own tool) are read by harness.targets.target_keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.scenario.model import SESSION_MODES, STEP_KINDS
from harness.targets.base import Target, template_fields, validate_template
from harness.targets.checkout import CheckoutError, Repository, open_repository, prepare_revision
from harness.targets.checkout_use import command_without_checkout
from harness.targets.target_keys import TargetKeys
from harness.targets.file_at_revision import (
    WORKING_TREE_OPTION,
    FileAtRevision,
    path_in_repository,
    read_at_revision,
    repository_folder,
)
from harness.documents.located import LocatedDict, child_path, describe, item_path, load_located, load_located_file

PROTOCOLS = ("anthropic", "openai-chat", "openai-responses", "gemini")  # the journal's wire formats (journal/exchange.py)
# What a target file's strings become, for the NUL refusal's message (validation.Reader.no_nul).
PATH, REVISION, ENVIRONMENT = ("it is a path", "it is passed to git as an argument",
                               "it becomes an environment value of the agent")
# A step that reaches its session another way (a scenario step's `session: fork|continue`): `resume+fork:` ...
SESSION_COMMANDS = tuple(f"{kind}+{mode}" for kind in STEP_KINDS[1:] for mode in SESSION_MODES)
_TOP_KEYS = ("name", "protocol", "repo", "rev", *STEP_KINDS, *SESSION_COMMANDS, "session_id", "steps_without_session_id",
             "identity", "timeout_s", "env", "side_calls", "tool_call")
WORKING_TREE = "working-tree"  # the name suffix of a `repo:` target run from the folder as it is
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def load_target_file(path: str | Path, rev: str | None = None, *, target_file_from_working_tree: bool = False) -> Target:
    """The target a file describes; `rev` (from a `FILE@REV` spec) overrides the file's `rev:`.

    With `rev`, the file is read as it is at that revision when it lies in the
    repository its `repo:` names (the working tree's file says which repository
    that is); `target_file_from_working_tree` reads the working tree's file instead,
    with `{target_dir}` its folder there.
    """
    path = Path(path)
    doc = load_located_file(path)
    reader = _TargetReader(path, rev)
    if rev is None or target_file_from_working_tree or not isinstance(doc, LocatedDict):
        return reader.target(doc)
    at_revision = reader.file_at_revision(doc)
    if at_revision is None:  # no version of the file at REV: the one on disk serves every revision
        return reader.target(doc)
    return _TargetReader(path, rev, at_revision).target(load_located(at_revision.text, at_revision.label))


class _TargetReader(TargetKeys):
    """Validates one target file's text; errors name `self.path`, the file or `FILE@REV` for its text at REV."""

    def __init__(self, path: Path, rev_override: str | None = None, at_revision: FileAtRevision | None = None):
        super().__init__(at_revision.label if at_revision is not None else path)
        self.file = path  # where the file lies in the working tree: relative `repo:` paths start from its folder
        self.rev_override = rev_override
        self.at_revision = at_revision
        self.has_repo = False

    def target(self, doc: Any) -> Target:
        if doc is None:
            raise self.error("empty file: expected a target mapping with name, launch, resume and session_id", 1, "")
        doc = self.mapping(doc, getattr(doc, "line", 1), "", "a target mapping")
        self.known_keys(doc, _TOP_KEYS, "")
        name = self.string(self.require(doc, "name", ""), doc.key_line("name"), "name", non_empty=True)
        self.printable_name(name, doc.key_line("name"))
        repo, rev = self.repo_and_rev(doc)
        # `protocol` documents the wire format the agent speaks; the fake API reads it off each request path.
        protocol = self.optional_string(doc, "protocol", "") or "anthropic"
        if protocol not in PROTOCOLS:
            raise self.error(f"expected one of {', '.join(PROTOCOLS)}, got {protocol!r}", doc.key_line("protocol"), "protocol")
        commands = {}
        for kind in (*STEP_KINDS, *SESSION_COMMANDS):
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
        quiet_steps = self.steps_without_session_id(doc)
        tool_call = self.tool_call(doc)
        # Only a file valid throughout reaches git: a typo never costs a checkout.
        checkout, revision, target_dir = None, None, self.file.resolve().parent
        if repo is not None:
            repository = self.repository(doc, repo)
            self.require_checkout_use(doc, commands, env, self.target_dir_is_code(repository, rev))
            checkout, revision = self.prepare(doc, repository, rev)
            if self.at_revision is not None:
                target_dir = self.at_revision.target_dir
            name = f"{name}@{rev if rev is not None else WORKING_TREE}"
        return Target(
            name=name,
            commands=commands,
            session_id=session_id,
            identity_regex=identity_regex,
            timeout_s=timeout_s,
            env=env,
            target_dir=target_dir,
            side_calls=side_calls,
            steps_without_session_id=quiet_steps,
            source=self.file,
            tool_call=tool_call,
            checkout=checkout,
            revision=revision,
        )

    def file_at_revision(self, doc: LocatedDict) -> FileAtRevision | None:
        """This file's text at the spec's revision, or None when the file is not one of its `repo:`'s files."""
        repo, rev = self.repo_and_rev(doc)  # the working tree's `repo:` says which repository REV is of
        assert repo is not None and rev is not None  # repo_and_rev refuses a revision without `repo:`
        repository = self.repository(doc, repo)
        in_repository = path_in_repository(self.file, repository)
        if in_repository is None:
            return None
        return read_at_revision(self.file, rev, repository, in_repository)

    def repo_and_rev(self, doc: LocatedDict) -> tuple[Path | None, str | None]:
        """`repo:` as an absolute path (relative to the file's folder) and the revision asked for, if any."""
        repo = None
        text = self.optional_string(doc, "repo", "", non_empty=True)
        if text is not None:
            self.no_nul(text, doc.key_line("repo"), "repo", carried_as=PATH)
            repo = (self.file.resolve().parent / Path(text).expanduser()).resolve()
        rev = self.optional_string(doc, "rev", "", non_empty=True)
        if rev is not None:
            self.no_nul(rev, doc.key_line("rev"), "rev", carried_as=REVISION)
        if rev is not None and repo is None:
            raise self.error(
                "needs `repo:`, the git repository to check the revision out of (relative paths are relative to the "
                "target file's folder)", doc.key_line("rev"), "rev",
            )
        if self.rev_override is not None:
            if repo is None and self.at_revision is not None:
                raise InputError(
                    f"this target file has no `repo:` at {self.rev_override!r} (the working tree's file has one), so that "
                    "revision names no code to check out; add `repo:` to the file at that revision, or pass "
                    f"{WORKING_TREE_OPTION} to run that revision's code with the working tree's target file",
                    self.path,
                )
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

    def repository(self, doc: LocatedDict, repo: Path) -> Repository:
        """The repository `repo:` names; for the file's text at a revision, a folder of the repository it was read from."""
        if self.at_revision is not None:
            repository = repository_folder(self.at_revision.repository, repo)
            if repository is None:
                raise self.error(
                    f"names {repo}, outside the git repository {self.at_revision.repository.toplevel} this file was read "
                    f"from at {self.at_revision.rev!r}; the file at a revision runs that revision's code, so `repo:` "
                    "must name a folder of that same repository", doc.key_line("repo"), "repo",
                )
            return repository
        try:
            return open_repository(repo)
        except CheckoutError as exc:
            raise self.error(exc.message, doc.key_line("repo"), "repo") from None

    def prepare(self, doc: LocatedDict, repository: Repository, rev: str | None) -> tuple[Path, str | None]:
        """({checkout}, its commit): the folder as it is without a revision, else its worktree at `rev`."""
        if rev is None:
            return repository.path, None
        pinned = self.at_revision.sha if self.at_revision is not None else None  # the file's commit is the code's
        try:
            return prepare_revision(repository, rev, sha=pinned)
        except CheckoutError as exc:
            if self.at_revision is not None:  # the file at REV named the folder: blame its line
                raise self.error(exc.message, doc.key_line("repo"), "repo") from None
            if self.rev_override is not None:  # the revision came from `FILE@REV`, not from a line of the file
                raise InputError(f"@{rev} (from the target spec): {exc.message}", self.path) from None
            raise self.error(exc.message, doc.key_line("rev"), "rev") from None

    def target_dir_is_code(self, repository: Repository, rev: str | None) -> bool:
        """Whether `{target_dir}` is a folder of the tree the agent's code runs from, as `{checkout}` is.

        Read at REV, the file's folder is inside REV's worktree: `{target_dir}/agent.py`
        is REV's agent.py, as surely as `{checkout}/agent.py` would be. Read from
        the working tree for a revision (a `rev:` of the file itself, or the
        working tree's file asked for), the folder is the working tree's: the same
        code for every revision, however the file names it. Without a revision
        the working tree is the code, so a file inside the repository reaches it.
        """
        if self.at_revision is not None:
            return True
        if rev is not None:
            return False
        return self.file.resolve().parent.is_relative_to(repository.toplevel.resolve())

    def require_checkout_use(self, doc: LocatedDict, commands: dict[str, tuple[str, ...]], env: dict[str, str],
                             target_dir_is_code: bool) -> None:
        missing = command_without_checkout(commands, env, target_dir_is_code)
        if missing is not None:
            kind, why = missing
            raise self.error(why, doc.key_line(kind), kind)

    def argv(self, value: Any, line: int | None, where: str) -> tuple[str, ...]:
        items = self.list_(value, line, where, "a non-empty list of command arguments")
        argv = []
        for i, item in enumerate(items):
            item_where = item_path(where, i)
            text = self.string(item, items.item_line(i), item_where)
            self.no_nul(text, items.item_line(i), item_where)
            self.template(text, items.item_line(i), item_where)
            argv.append(text)
        return tuple(argv)

    def printable_name(self, name: str, line: int | None) -> None:
        """The name goes into file names, junit.xml and every report: a NUL or other control character breaks them."""
        bad = next((c for c in name if ord(c) < 0x20 or ord(c) == 0x7F), None)
        if bad is not None:
            raise self.error(f"contains the control character {bad!r} (in {describe(name)}); a target's name goes into "
                             "file names and reports, so it must be printable text", line, "name")

    def template(self, text: str, line: int | None, where: str) -> None:
        validate_template(text, where, self.path, line)
        if "checkout" in template_fields(text) and not self.has_repo:
            raise self.error(
                f"{{checkout}} in {text!r} is the agent's code checked out from `repo:`, and this file has no `repo:`; "
                "add `repo: PATH` (and `rev: REV`), or use {target_dir} for the target file's folder",
                line, where,
            )

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
            self.no_nul(text, m.key_line(key), where, carried_as=ENVIRONMENT)
            self.template(text, m.key_line(key), where)
            env[key] = text
        return env


def revision_repository(path: str | Path) -> Repository:
    """The git repository whose revisions `FILE@REV` names: the working tree file's `repo:` (for `harness bisect`)."""
    path = Path(path)
    doc = load_located_file(path)
    reader = _TargetReader(path, rev_override="HEAD")
    if not isinstance(doc, LocatedDict):
        raise InputError("a target file is a mapping of keys (docs/reference/target-file.md)", path)
    repo, _ = reader.repo_and_rev(doc)
    assert repo is not None  # repo_and_rev refuses a revision without `repo:`
    return reader.repository(doc, repo)
