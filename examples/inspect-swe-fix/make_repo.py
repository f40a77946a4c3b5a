"""Build a local git repository of inspect-swe with the every-launch fix on top.

    python make_repo.py DEST [--version 0.2.72] [--sdist-dir DIR]

Commit 1 is the release's source tree from its PyPI sdist, as is; commit 2 is
every-launch.patch (beside this script) applied to it. Prints the two commit
ids as `release=<sha>` and `fix=<sha>`. Both commits carry a fixed identity and
a date taken from the sdist, so the same sdist gives the same ids everywhere.

The sdist is looked for in --sdist-dir and downloaded there (or into a
temporary folder without --sdist-dir) with `python -m pip download` when
missing. DEST must not exist or be an empty folder; it is only created once
the whole repository is built. Standard library only; errors say which step
failed and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

DEFAULT_VERSION = "0.2.72"
PATCH = Path(__file__).resolve().parent / "every-launch.patch"
RELEASE_MESSAGE = "inspect-swe {version} as released"
FIX_MESSAGE = "claude_code(): pass the caller's system messages on every launch"
GIT_IDENTITY = ["-c", "user.name=harness", "-c", "user.email=harness@localhost"]
# Settings that would otherwise make the commits depend on the machine's git config.
RELEASE_TAG, FIX_TAG = "release", "every-launch-fix"
GIT_SETTINGS = ["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "core.hooksPath=" + os.devnull]
VERSION_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]*")


class MakeRepoError(Exception):
    """A step failed; the message says which one and why."""

    def __init__(self, step: str, why: str) -> None:
        super().__init__(f"{step}: {why}")
        self.step = step
        self.why = why


def build_repo(dest: Path, version: str = DEFAULT_VERSION, sdist_dir: Path | None = None) -> tuple[str, str]:
    """Build the repository at `dest`; return the (release, fix) commit ids."""
    if not VERSION_RE.fullmatch(version):
        raise MakeRepoError("checking --version", f"{version!r} is not a release version such as {DEFAULT_VERSION}")
    dest = Path(dest).expanduser().absolute()
    check_dest(dest)
    if not PATCH.is_file():
        raise MakeRepoError("reading the patch", f"{PATCH} is missing")
    git = shutil.which("git")
    if git is None:
        raise MakeRepoError("finding git", "no `git` on PATH")

    with tempfile.TemporaryDirectory(prefix="make_repo-") as tmp:
        if sdist_dir is None:
            sdist = fetch_sdist(version, Path(tmp) / "sdist")
        else:
            sdist_dir = Path(sdist_dir).expanduser().absolute()
            if sdist_dir.exists() and not sdist_dir.is_dir():
                raise MakeRepoError("checking --sdist-dir", f"{sdist_dir} is not a folder")
            sdist = find_sdist(sdist_dir, version) or fetch_sdist(version, sdist_dir)
        # Build beside DEST (same file system), then rename: a failed run leaves no half-built DEST.
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.building-", dir=dest.parent))
        except OSError as ex:
            raise MakeRepoError("creating DEST", f"cannot write in {dest.parent}: {ex}") from None
        try:
            root = extract(sdist, version, stage)
            release, fix = commit_release_and_fix(git, root, version, sdist)
            check_dest(dest)
            try:
                if dest.exists():
                    dest.rmdir()
                root.rename(dest)
            except OSError as ex:
                raise MakeRepoError("moving the repository into DEST", str(ex)) from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return release, fix


def check_dest(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise MakeRepoError("checking DEST", f"{dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        raise MakeRepoError("checking DEST", f"{dest} is not empty; give a new or empty folder")


def sdist_names(version: str) -> list[str]:
    # Current sdists are named after the normalized project name (PEP 625); older ones kept the dash.
    return [f"inspect_swe-{version}.tar.gz", f"inspect-swe-{version}.tar.gz"]


def find_sdist(folder: Path, version: str) -> Path | None:
    for name in sdist_names(version):
        if (folder / name).is_file():
            return folder / name
    return None


def fetch_sdist(version: str, folder: Path) -> Path:
    step = f"downloading the inspect-swe {version} sdist with pip"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        raise MakeRepoError(step, f"cannot create {folder}: {ex}") from None
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           f"inspect-swe=={version}", "-d", str(folder)]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    except OSError as ex:
        raise MakeRepoError(step, f"could not run {sys.executable}: {ex}") from None
    if proc.returncode != 0:
        raise MakeRepoError(step, f"`{' '.join(cmd)}` exited with {proc.returncode}:\n{tail(proc.stderr or proc.stdout)}")
    sdist = find_sdist(folder, version)
    if sdist is None:
        found = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise MakeRepoError(step, f"pip succeeded but {folder} holds no {' or '.join(sdist_names(version))} (found: {found})")
    return sdist


def extract(sdist: Path, version: str, into: Path) -> Path:
    """Unpack the sdist's single top folder into `into`; return that folder."""
    step = f"unpacking {sdist}"
    top = sdist.name[: -len(".tar.gz")]
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            members = tar.getmembers()
            for member in members:
                path = PurePosixPath(member.name)
                if path.is_absolute() or ".." in path.parts or path.parts[:1] != (top,):
                    raise MakeRepoError(step, f"unexpected member {member.name!r} (everything should be under {top}/)")
                if not (member.isfile() or member.isdir()):
                    raise MakeRepoError(step, f"member {member.name!r} is not a regular file or folder")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, members=members, filter="data")
            else:  # Python without extraction filters: the checks above did their job
                tar.extractall(into, members=members)
    except (tarfile.TarError, OSError, EOFError) as ex:
        raise MakeRepoError(step, f"not a readable .tar.gz: {ex}") from None
    root = into / top
    for needed in ("pyproject.toml", "src/inspect_swe/_claude_code/claude_code.py"):
        if not (root / needed).is_file():
            raise MakeRepoError(step, f"{top}/{needed} is missing: this is not the inspect-swe source tree")
    return root


def commit_release_and_fix(git: str, root: Path, version: str, sdist: Path) -> tuple[str, str]:
    # The newest file time in the sdist dates both commits, so the ids depend on the sdist alone.
    with tarfile.open(sdist, "r:gz") as tar:
        stamp = max(int(m.mtime) for m in tar.getmembers())
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_DATE=f"@{stamp} +0000",
        GIT_COMMITTER_DATE=f"@{stamp} +0000",
    )

    def run(step: str, *args: str) -> str:
        cmd = [git, *GIT_IDENTITY, *GIT_SETTINGS, *args]
        proc = subprocess.run(cmd, check=False, cwd=root, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise MakeRepoError(step, f"`git {' '.join(args)}` exited with {proc.returncode}:\n{tail(proc.stderr or proc.stdout)}")
        return proc.stdout.strip()

    run("creating the repository", "-c", "init.defaultBranch=main", "init", "-q")
    # --force: the release as is, including files its .gitignore names (src/inspect_swe/_version.py)
    run("committing the release", "add", "--all", "--force", ".")
    run("committing the release", "commit", "-q", "-m", RELEASE_MESSAGE.format(version=version))
    release = run("committing the release", "rev-parse", "HEAD")
    step = f"applying {PATCH.name} to inspect-swe {version}"
    run(step, "apply", "--check", str(PATCH))
    run(step, "apply", "--index", str(PATCH))
    run("committing the fix", "commit", "-q", "-m", FIX_MESSAGE)
    fix = run("committing the fix", "rev-parse", "HEAD")
    # Names a target can use: inspect-swe+checkout=DEST#release and ...#every-launch-fix.
    run("tagging the commits", "tag", RELEASE_TAG, release)
    run("tagging the commits", "tag", FIX_TAG, fix)
    return release, fix


def tail(text: str, lines: int = 15) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join("    " + line for line in kept) or "    (no output)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build a git repository of inspect-swe: the release, then every-launch.patch on top."
    )
    parser.add_argument("dest", type=Path, help="new (or empty) folder for the repository")
    parser.add_argument("--version", default=DEFAULT_VERSION, help=f"inspect-swe release (default {DEFAULT_VERSION})")
    parser.add_argument("--sdist-dir", type=Path, help="folder holding the sdist (downloaded there if missing)")
    args = parser.parse_args(argv)
    try:
        release, fix = build_repo(args.dest, args.version, args.sdist_dir)
    except MakeRepoError as ex:
        print(f"make_repo.py: error while {ex}", file=sys.stderr)
        return 2
    print(f"release={release}")
    print(f"fix={fix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
