"""An agent's own code at a git revision: a detached worktree in the tool folder, prepared once.

A target file with `repo: PATH` and `rev: REV` runs the agent from
`.tools/worktrees/<repo>-<sha12>/` (see harness.targets.installs.tools_root), a detached
`git worktree` of that commit. The user's branches and working tree are never
touched: `git worktree add` only records the new worktree under the repository's
`.git/worktrees/`. A worktree is created under a lock and marked complete
afterwards, so parallel workers asking for the same commit create it once and
nobody runs a half-checked-out tree; an incomplete one left by a crash is
removed and made again. `repo:` without `rev:` runs the folder as it is,
uncommitted changes included. Submodules are not checked out.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.targets.installs import _lock, tools_root

MARKER = ".harness-complete"
WORKTREES = "worktrees"
_GIT_TIMEOUT_S = 60
_CHECKOUT_TIMEOUT_S = 900
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CheckoutError(InputError):
    """A repository or revision that cannot be used; `key` says which ("repo" or "rev") is at fault."""

    def __init__(self, message: str, key: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Repository:
    path: Path  # the folder the target file names, absolute (maybe only at a revision: git runs in toplevel)
    toplevel: Path  # the root of its working tree
    prefix: str  # path from toplevel to `path`, "" or ending in "/"


def open_repository(path: Path) -> Repository:
    """The git working tree `path` belongs to, or a CheckoutError saying why there is none."""
    path = Path(path)
    if not path.exists():
        raise CheckoutError(f"no such folder: {path}", "repo")
    if not path.is_dir():
        raise CheckoutError(f"expected the folder of a git repository, got a file: {path}", "repo")
    done = git(path, "rev-parse", "--show-toplevel", "--show-prefix", key="repo")
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        raise CheckoutError(f"{path} is not a git repository with a working tree ({_reason(done)})", "repo")
    toplevel, prefix = Path(lines[0]), lines[1] if len(lines) > 1 else ""
    return Repository(path.resolve(), toplevel, prefix)


def resolve_revision(repo: Repository, rev: str) -> str:
    """The full sha of the commit `rev` (a branch, tag or commit) names in `repo`."""
    if not rev.strip() or rev.startswith("-") or rev != rev.strip():
        raise CheckoutError(f"expected a branch, tag or commit, got {rev!r}", "rev")
    done = git(repo.toplevel, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", key="rev")
    sha = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise CheckoutError(
            f"no commit named {rev!r} in the git repository {repo.toplevel} "
            f"(`git -C {repo.toplevel} rev-parse --verify '{rev}^{{commit}}'` fails){_known_names(repo)}",
            "rev",
        )
    return sha


def prepare_revision(repo: Repository, rev: str, *, quiet: bool = False, sha: str | None = None) -> tuple[Path, str]:
    """(folder of `repo.path` in a worktree of `rev`, full sha), creating the worktree on first use.

    `sha`, when the caller already resolved `rev`, pins the commit: the target file read at a revision
    and the code run for it then come from one commit even if the branch moves in between.
    """
    sha = sha or resolve_revision(repo, rev)
    home = worktree_path(repo, sha)
    if not _complete(home, sha):
        home.parent.mkdir(parents=True, exist_ok=True)
        with _lock(home.parent / f".{home.name}.lock"):
            if not _complete(home, sha):  # another worker may have finished it while we waited
                _create(repo, rev, sha, home, quiet)
    checkout = home / repo.prefix if repo.prefix else home
    if not checkout.is_dir():
        raise CheckoutError(
            f"the folder {repo.prefix.rstrip('/')} of {repo.toplevel} does not exist at {rev!r} ({sha[:12]})", "rev"
        )
    return checkout, sha


def worktree_path(repo: Repository, sha: str) -> Path:
    name = _UNSAFE.sub("_", repo.toplevel.name) or "repo"
    return tools_root() / WORKTREES / f"{name}-{sha[:12]}"


def _complete(home: Path, sha: str) -> bool:
    marker = home / MARKER
    try:
        return (home / ".git").exists() and marker.read_text().strip() == sha
    except OSError:
        return False


def _create(repo: Repository, rev: str, sha: str, home: Path, quiet: bool) -> None:
    _discard(repo, home)
    if not quiet:
        print(f"harness: checking out {rev} ({sha[:12]}) of {repo.toplevel} into {home} (first use)", file=sys.stderr, flush=True)
    # --force twice: the path may still be registered by a worktree whose folder was deleted
    # (the tool folder removed, a crash mid-checkout); hooks off: a checkout for a test run is not the user's checkout.
    done = git(repo.toplevel, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--force", "--force", "--detach",
                str(home), sha, key="rev", timeout=_CHECKOUT_TIMEOUT_S)
    if done.returncode != 0:
        _discard(repo, home)
        raise CheckoutError(f"cannot check out {rev!r} ({sha[:12]}) of {repo.toplevel} into {home}: {_reason(done)}", "rev")
    (home / MARKER).write_text(sha + "\n")


def _discard(repo: Repository, home: Path) -> None:
    """Remove an incomplete worktree at `home`: its registration in the repository, then its files."""
    if home.exists() or home.is_symlink():
        git(repo.toplevel, "worktree", "remove", "--force", "--force", str(home), key="rev")
        if home.is_symlink() or home.is_file():
            home.unlink()
        else:
            shutil.rmtree(home, ignore_errors=True)


def harness_worktrees() -> list[Path]:
    """The worktrees this harness made in the tool folder (for `harness clean`)."""
    folder = tools_root() / WORKTREES
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def remove_worktree(home: Path) -> str:
    """Unregister `home` from its repository and delete it, under the lock that creates it; what was done, in words.

    A worktree another harness is creating right now (its lock held) is left alone. One whose repository is gone
    is only deleted; `git worktree prune` in the repository afterwards drops registrations of folders deleted
    by hand.
    """
    lock = home.parent / f".{home.name}.lock"
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return f"left {home}: another harness is checking it out now"
        common = git(home, "rev-parse", "--path-format=absolute", "--git-common-dir", key="repo")
        repository = Path(common.stdout.strip()).parent if common.returncode == 0 and common.stdout.strip() else None
        if repository is not None and repository.is_dir():
            git(repository, "worktree", "remove", "--force", "--force", str(home), key="repo")
            git(repository, "worktree", "prune", key="repo")
        shutil.rmtree(home, ignore_errors=True)
    where = f" (unregistered from {repository})" if repository is not None else ""
    return f"removed {home}{where}"


def _known_names(repo: Repository, limit: int = 10) -> str:
    done = git(repo.toplevel, "for-each-ref", "--format=%(refname:short)", "--sort=-committerdate", "refs/heads", "refs/tags", key="rev")
    names = done.stdout.split() if done.returncode == 0 else []
    if not names:
        return ""
    more = f", … ({len(names) - limit} more)" if len(names) > limit else ""
    return f"; branches and tags there: {', '.join(names[:limit])}{more}"


def git(cwd: Path, *args: str, key: str, timeout: float = _GIT_TIMEOUT_S, text: bool = True) -> subprocess.CompletedProcess:
    """`git -C cwd ARGS`; a CheckoutError blaming `key` where git cannot run at all."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    argv = ["git", "-C", str(cwd), *args]
    try:
        return subprocess.run(argv, check=False, capture_output=True, text=text, env=env, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise CheckoutError("git is not on PATH; `repo:` needs it to read the repository", key) from None
    except subprocess.TimeoutExpired:
        raise CheckoutError(f"`{' '.join(argv)}` did not finish within {timeout:g}s", key) from None


def _reason(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return "git says: " + " | ".join(lines[-2:]) if lines else f"git exited with code {done.returncode}"
