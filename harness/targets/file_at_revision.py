"""A target file as it is at a git revision: `FILE@REV` reads the file's own text from REV, not the working tree's.

A branch that changes how its agent is launched (a renamed flag, a new
option) changes its target file in the same commit. Reading the working
tree's file for both sides of a comparison would run the base's code with the
head's arguments: a false red where the branch is right, and worse, a base
that is not the base. So when the target file lies in the git repository its
`repo:` names, `FILE@REV` takes the file's text from REV's commit
(`git cat-file blob SHA:PATH`, before any checkout: a typo at REV costs no
worktree), and `{target_dir}` is the file's folder inside REV's worktree, so
the files beside it are REV's too.

A file outside that repository (in no git repository, or in another one,
such as a folder of target files kept apart from the agents they describe)
has no text at REV: it is read from disk, the same for every revision, and
only the code comes from REV. That is the one case the working tree's file is
used without being asked for (the option `target_file_from_working_tree` asks
for it everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.targets.checkout import CheckoutError, Repository, git, resolve_revision, worktree_path

WORKING_TREE_OPTION = "--target-file-from-working-tree"  # how a user asks for the working tree's file (harness run/diff, pytest)


@dataclass(frozen=True)
class FileAtRevision:
    label: str  # "FILE@REV" as the user wrote it: every error about this text names it
    repository: Repository  # the repository the text was read from
    rev: str
    sha: str
    path_in_repository: str  # the file's path from the repository's toplevel, "/"-separated
    text: str

    @property
    def target_dir(self) -> Path:
        """The file's folder in REV's worktree (which exists once the revision is prepared)."""
        folder = Path(self.path_in_repository).parent
        home = worktree_path(self.repository, self.sha)
        return home if folder == Path(".") else home / folder


def path_in_repository(path: Path, repository: Repository) -> str | None:
    """The file's path from the toplevel when the file is one of `repository`'s (tracked or not), else None.

    A file below the toplevel that belongs to a nested repository or a submodule
    is that repository's, not this one's: None as well.
    """
    file = path.resolve()
    toplevel = repository.toplevel.resolve()
    if not file.is_relative_to(toplevel):
        return None
    done = git(file.parent, "rev-parse", "--show-toplevel", key="repo")
    if done.returncode != 0 or Path(done.stdout.strip()).resolve() != toplevel:
        return None
    return file.relative_to(toplevel).as_posix()


def read_at_revision(path: Path, rev: str, repository: Repository, in_repository: str) -> FileAtRevision:
    """The text of the target file `path` at `rev`, or one InputError naming `FILE@REV` and what to do."""
    label = f"{path}@{rev}"
    try:
        sha = resolve_revision(repository, rev)
    except CheckoutError as exc:
        raise InputError(f"@{rev} (from the target spec): {exc.message}", path) from None
    kind = git(repository.toplevel, "cat-file", "-t", f"{sha}:{in_repository}", key="rev")
    if kind.returncode != 0:
        raise InputError(
            f"this target file did not exist at {rev!r} ({sha[:12]}): {in_repository} is not in that commit of "
            f"{repository.toplevel}; commit it at that revision, or pass {WORKING_TREE_OPTION} to run that "
            "revision's code with the working tree's target file",
            label,
        )
    if kind.stdout.strip() != "blob":
        raise InputError(f"at {rev!r} ({sha[:12]}), {in_repository} is a {kind.stdout.strip()}, not a target file", label)
    blob = git(repository.toplevel, "cat-file", "blob", f"{sha}:{in_repository}", key="rev", text=False)
    if blob.returncode != 0:
        raise InputError(f"cannot read {in_repository} at {rev!r} ({sha[:12]}) from {repository.toplevel}", label)
    return FileAtRevision(label, repository, rev, sha, in_repository, _decode(blob.stdout, label))


def _decode(raw: bytes, label: str) -> str:
    """UTF-8 as every target file is read (harness.documents.located.load_located_file), the failure at its line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise InputError(f"not UTF-8 text: byte 0x{raw[error.start]:02x} at column {column} cannot be decoded",
                         label, line) from None


def repository_folder(repository: Repository, folder: Path) -> Repository | None:
    """`folder` (absolute, maybe absent from the working tree) as a folder of `repository`, or None if outside it.

    The file at REV may name another folder of the same repository than the working
    tree's file does (the agent moved); that folder need exist only at REV, which
    preparing the revision checks.
    """
    toplevel = repository.toplevel.resolve()
    if not folder.is_relative_to(toplevel):
        return None
    relative = folder.relative_to(toplevel).as_posix()
    return Repository(folder, repository.toplevel, "" if relative == "." else relative + "/")
