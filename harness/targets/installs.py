"""The project-local tool folder: exact versions of the agents under test, installed once, side by side.

`<tools>/<tool>/<version>/`, where <tools> is $HARNESS_TOOLS_DIR, else the
project's configured `tools_dir` (this repository's says `.tools`), else
~/.cache/harness/tools: never committed, reused across runs and projects. Installs happen under a lock and count only
once marked complete, so parallel workers asking for the same version install it
once and nobody ever runs a half-installed tool. npm packages are staged and
renamed into place; a Python virtualenv cannot move (its scripts name their
interpreter by absolute path), so it is built in place and a leftover without the
mark is removed first. Its dependencies are resolved as of the release's upload
(an old launcher with today's libraries may not even import), and what they came
to is written beside it (resolved.txt), since a verdict depends on them too.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from harness.config import TOOLS_ENV
from harness.errors import InputError
from harness.targets.release_index import release

ENV_VAR = TOOLS_ENV
VERSION_RE = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")
_INSTALL_TIMEOUT_S = 900


def node_platform() -> tuple[str, str]:
    """(os, cpu) as npm names them in platform packages (`linux`, `x64`): where the CLIs keep their native builds."""
    import platform

    machine = platform.machine().lower()
    return platform.system().lower(), {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)


def node_script(tool: str, package: str, version: str, relative: str) -> tuple[str, str]:
    """node and a script of one installed npm version, for CLIs shipped as JavaScript (installing it on first use)."""
    package_dir = npm_package_dir(tool, package, version)
    script = package_dir / relative
    if not script.is_file():
        raise InputError(f"{tool}@{version}: the install has no {script}; remove {tools_root() / tool / version} to reinstall it")
    node = shutil.which("node")
    if node is None:
        raise InputError(f"{tool}@{version} runs under Node.js and node is not on PATH")
    return node, str(script)


def tools_root() -> Path:
    """$HARNESS_TOOLS_DIR, else the configuration's tools_dir, else the user's cache folder (harness/config)."""
    from harness import config

    return config.current().tools_folder()


def npm_package_dir(tool: str, package: str, version: str, *, quiet: bool = False) -> Path:
    """node_modules/<package> of an exact version in the tool folder, installing it on first use."""
    if not VERSION_RE.fullmatch(version):
        raise InputError(f"{tool}: expected an exact version such as 2.1.332, got {version!r}")
    home = tools_root() / tool / version
    installed = home / "node_modules" / package
    if (home / ".complete").is_file():
        return installed
    home.parent.mkdir(parents=True, exist_ok=True)
    with _lock(home.parent / f".{version}.lock"):
        if (home / ".complete").is_file():  # another worker finished it while we waited
            return installed
        _npm_install(tool, package, version, home, quiet)
    return installed


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(tool: str, package: str, version: str, home: Path, quiet: bool) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise InputError(f"{tool}@{version} is not installed in {home} and npm is not on PATH to install it")
    staging = home.parent / f".staging-{version}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if not quiet:
        print(f"harness: installing {package}@{version} into {home} (first use)", file=sys.stderr, flush=True)
    started = time.monotonic()
    # Install scripts stay off: the harness runs the platform binary itself, and nothing runs at install time.
    argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
            "--ignore-scripts", "--loglevel=error", f"{package}@{version}"]
    _install_step(argv, f"{package}@{version}", staging, lambda err: _npm_reason(err, package, version))
    (staging / ".complete").write_text(f"{package}@{version}\n")
    shutil.rmtree(home, ignore_errors=True)
    os.rename(staging, home)
    if not quiet:
        print(f"harness: installed {package}@{version} in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)


def _install_step(argv: list[str], what: str, partial: Path, reason: Callable[[str], str]) -> None:
    """One installer command; on failure the partial install is removed and the installer's reason raised."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        raise InputError(f"installing {what} timed out after {_INSTALL_TIMEOUT_S}s") from None
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise InputError(f"cannot install {what}: {reason(done.stderr)}")


def pip_venv_dir(tool: str, package: str, version: str, *, quiet: bool = False, companions: tuple[str, ...] = (),
                 pinned: tuple[str, ...] = ()) -> Path:
    """A virtualenv of its own holding `package==version` from PyPI, installing it on first use.

    `companions`: packages installed with it; each pinned one (`NAME==X`) as named, the others, like every
    dependency, as the package index had them when the newest pinned release came out (resolved.txt).
    `pinned`: companions a user pinned (a catalog entry's `+with=NAME==X`, where the release's own time is not enough):
    such an install is another set of packages, so it gets a folder of its own (`VERSION+with=...`).
    """
    if not VERSION_RE.fullmatch(version):
        raise InputError(f"{tool}: expected an exact version such as 0.0.946, got {version!r}")
    home = tools_root() / tool / install_key(version, pinned)
    venv = home / "venv"
    if (home / ".complete").is_file():
        return venv
    home.parent.mkdir(parents=True, exist_ok=True)
    with _lock(home.parent / f".{home.name}.lock"):
        if (home / ".complete").is_file():
            return venv
        shutil.rmtree(home, ignore_errors=True)  # an install that died half-way
        _pip_install(tool, package, version, home, venv, quiet, (*companions, *pinned))
    return venv


def resolved_set(tool: str, version: str) -> list[str] | None:
    """`name==version` of everything in that install's virtualenv, as resolved when it was made (None: made before
    the harness recorded it). A verdict on an old release depends on its companions as much as on the release."""
    path = tools_root() / tool / version / RESOLVED
    if not path.is_file():
        return None
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def resolved_as_of(tool: str, version: str) -> str | None:
    """The upload-time cutoff that install resolved under (ISO 8601, UTC), from resolved.txt's first line."""
    path = tools_root() / tool / version / RESOLVED
    if not path.is_file():
        return None
    match = re.search(rf"^{re.escape(_AS_OF)}(\S+)", path.read_text(), re.MULTILINE)
    return match.group(1) if match else None


def install_key(version: str, pinned: tuple[str, ...] = ()) -> str:
    """The folder of a release's install: its version, then the companions a user pinned, in a stable order."""
    return version + "".join(f"+with={requirement}" for requirement in sorted(pinned))


def install_record(tool: str, version: str) -> tuple[str, ...]:
    """What a report says an install runs: when its dependencies were resolved as of, then every `name==version`.

    An install made before the harness recorded its resolution says so, with what its mark kept (the release and its
    named companions), rather than nothing.
    """
    found = resolved_set(tool, version)
    if found is not None:
        as_of = resolved_as_of(tool, version)
        return ((f"resolved as of {as_of}",) if as_of else ()) + tuple(found)
    mark = tools_root() / tool / version / ".complete"
    kept = [line.strip() for line in mark.read_text().splitlines() if line.strip()] if mark.is_file() else []
    return ("dependencies not recorded (installed before the harness recorded them)", *kept)


def _pip_install(tool: str, package: str, version: str, home: Path, venv: Path, quiet: bool,
                 companions: tuple[str, ...] = ()) -> None:
    what = f"{package}=={version}"
    pinned = [(package, version)] + [exact for exact in map(_exact, companions) if exact is not None]
    try:  # asked before anything is made: a release the index lacks leaves no folder behind
        uploaded = {name: release("pypi", name, pinned_version).uploaded for name, pinned_version in pinned}
    except InputError as exc:
        raise InputError(f"cannot install {what}: {exc}") from None
    # Everything resolves as of the newest pinned release: the first moment the named set could be installed together
    # (a cutoff at the launcher's own time could refuse a newer pinned companion's requirements). The pinned packages
    # themselves are exempt (--exclude-newer-package NAME=now): `==X` already chose the release, and a file of it
    # uploaded seconds after the first must not make it vanish. uv, not pip: pip has no upload-time cutoff.
    as_of = max(uploaded.values())
    now = datetime.now(timezone.utc)
    if not quiet:
        print(f"harness: installing {what} into {venv} (first use; dependencies as of {_iso(as_of)})", file=sys.stderr, flush=True)
    started = time.monotonic()
    uv = _uv()
    python = str(venv / "bin" / "python")
    steps = [
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        [uv, "pip", "install", "--quiet", "--no-progress", "--python", python, "--exclude-newer", _iso(as_of),
         *(arg for name in uploaded for arg in ("--exclude-newer-package", f"{name}={_iso(now)}")),
         what, *companions],
    ]
    for argv in steps:
        _install_step(argv, what, home, lambda err: _uv_reason(err, package, version))
    frozen = _freeze(uv, python, what, home)
    newest = max(uploaded, key=uploaded.get)
    (home / RESOLVED).write_text(f"{_AS_OF}{_iso(as_of)} (the upload of {newest}=={dict(pinned)[newest]})\n" + frozen)
    (home / ".complete").write_text(f"{what}\n" + "".join(f"{c}\n" for c in _installed(frozen, companions)))
    if not quiet:
        print(f"harness: installed {what} in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)


RESOLVED = "resolved.txt"
_AS_OF = "# resolved by uv with --exclude-newer "


def _exact(requirement: str) -> tuple[str, str] | None:
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s,;*]+)\s*", requirement)
    return (match.group(1), match.group(2)) if match else None


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _uv() -> str:
    """uv from the harness's own install (a dependency), else beside this interpreter, else on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise InputError("installing a Python launcher needs uv (a dependency of the harness); reinstall the harness")
    return found


def _freeze(uv: str, python: str, what: str, home: Path) -> str:
    try:
        done = subprocess.run([uv, "pip", "freeze", "--python", python], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        raise InputError(f"cannot install {what}: `uv pip freeze` could not list what was installed")
    return done.stdout


def _installed(frozen: str, packages: tuple[str, ...]) -> list[str]:
    """`name==version` of each package as resolved, named as the caller named it."""
    versions = {}
    for line in frozen.splitlines():
        name, sep, found = line.partition("==")
        if sep:
            versions[_normal(name)] = found.strip()
    found = []
    for requirement in packages:
        name = re.split(r"[=<>!~\[ ]", requirement, maxsplit=1)[0]
        found.append(f"{name}=={versions.get(_normal(name), '?')}")
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_latest_version(package: str) -> str:
    """The newest release of a PyPI package, as pip's index reports it (the network is asked each time)."""
    argv = [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check", "--no-input"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise InputError(f"asking the package index for the latest {package} timed out") from None
    match = re.search(rf"^{re.escape(package)} \(([^)]+)\)", done.stdout, re.MULTILINE)
    if done.returncode != 0 or not match:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip() and "WARNING" not in line]
        raise InputError(f"cannot find the latest release of {package}: " + (" | ".join(lines[-2:]) or "pip printed no version"))
    return match.group(1)


def _uv_reason(stderr: str, package: str, version: str) -> str:
    if "no version of" in stderr and f"{package}=={version}" in stderr:
        return f"the package index has no version {version} of {package}"
    lines = [line.strip(" ×╰─▶│") for line in stderr.strip().splitlines() if line.strip() and not line.startswith("warning")]
    return "uv failed: " + (" | ".join(line for line in lines[-4:] if line) if lines else "no error output")


def _npm_reason(stderr: str, package: str, version: str) -> str:
    if "ETARGET" in stderr or "E404" in stderr or "No matching version" in stderr:
        return f"the registry has no version {version} of {package} (`npm view {package} versions` lists them)"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return "npm failed: " + (" | ".join(lines[-3:]) if lines else "no error output")
