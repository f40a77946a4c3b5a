"""The registry's own list of a package's releases and when each was uploaded.

Two uses need the registry's word rather than a guess: `harness bisect` walks
releases in version order between a good and a bad one, and an old Python
launcher is installed with the dependencies of its own time (uv's
--exclude-newer takes the upload time the package index reports;
harness/targets/installs.py). Answers are kept for the process only: a new
release can appear at any time, and a stale list on disk would hide it.

Every failure (no network, an unknown package, a registry answering nonsense)
is one InputError line naming the registry and package, never a traceback:
the caller asked about a package, and the answer is that it cannot be known.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone

from harness.errors import InputError

REGISTRIES = ("npm", "pypi")
PYPI_JSON_URL = "https://pypi.org/pypi/{package}/json"
_TIMEOUT_S = 60
_NPM_META_KEYS = ("created", "modified")  # npm's `time` map also dates the package itself


@dataclass(frozen=True)
class Release:
    version: str
    uploaded: datetime  # UTC; PyPI: the first of the release's files, the moment it could first be installed
    yanked: bool = False  # PyPI: every file yanked (installers skip it unless pinned); npm's deprecation is not this


def releases(registry: str, package: str) -> list[Release]:
    """In version order (npm: semver; PyPI: PEP 440), pre-releases included: a bisection may need to land on one."""
    return list(_releases(registry, package))


def release(registry: str, package: str, version: str) -> Release:
    """One release, refused by name when the registry does not list it (a typo must not bisect or install anything)."""
    listed = _releases(registry, package)
    for candidate in listed:
        if candidate.version == version:
            return candidate
    if registry == "pypi":  # PEP 440 spells one version many ways (0.2.45 == 0.2.45.0)
        wanted = _pep440_key(version)
        for candidate in listed:
            if _pep440_key(candidate.version) == wanted and wanted[0] != -1:
                return candidate
    newest = f" (newest listed: {listed[-1].version})" if listed else ""
    raise InputError(f"{_where(registry)} has no release {version} of {package}{newest}")


@functools.lru_cache(maxsize=None)
def _releases(registry: str, package: str) -> tuple[Release, ...]:
    if registry == "npm":
        return tuple(sorted(_npm(package), key=lambda r: _semver_key(r.version)))
    if registry == "pypi":
        return tuple(sorted(_pypi(package), key=lambda r: _pep440_key(r.version)))
    raise InputError(f"unknown registry {registry!r}: expected one of {', '.join(REGISTRIES)}")


def _where(registry: str) -> str:
    return {"npm": "the npm registry", "pypi": "the package index"}.get(registry, registry)


# --------------------------------------------------------------------------- npm


def _npm(package: str) -> list[Release]:
    npm = shutil.which("npm")
    if npm is None:
        raise InputError(f"cannot list the releases of {package}: npm is not on PATH")
    argv = [npm, "view", package, "time", "versions", "--json"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputError(f"asking the npm registry for the releases of {package} timed out after {_TIMEOUT_S}s") from None
    if done.returncode != 0:
        if "E404" in done.stderr or "404" in done.stdout:
            raise InputError(f"the npm registry has no package {package}")
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise InputError(f"cannot list the releases of {package}: npm failed: " + (" | ".join(lines[-2:]) or "no error output"))
    try:
        answer = json.loads(done.stdout)
        times, versions = answer["time"], answer["versions"]
        versions = [versions] if isinstance(versions, str) else list(versions)  # npm prints one version bare
        return [Release(v, _utc(times[v])) for v in versions if v not in _NPM_META_KEYS and times.get(v)]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"the npm registry's answer about {package} is not the expected JSON ({type(exc).__name__}: {exc})") from None


def _semver_key(version: str) -> tuple:
    """SemVer 2.0 precedence: a pre-release sorts before its release; build metadata is ignored."""
    core, _, pre = version.split("+", 1)[0].partition("-")
    numbers = tuple(int(part) if part.isdigit() else 0 for part in core.split("."))
    if not pre:
        return (numbers, 1, ())
    return (numbers, 0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))


# --------------------------------------------------------------------------- PyPI


def _pypi(package: str) -> list[Release]:
    url = PYPI_JSON_URL.format(package=urllib.parse.quote(package, safe=""))
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:  # urlopen honours the proxy variables; the system's certificates verify the index
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise InputError(f"the package index has no package {package}") from None
        raise InputError(f"the package index answered HTTP {exc.code} about {package}") from None
    except (urllib.error.URLError, OSError) as exc:  # TimeoutError is an OSError
        reason = getattr(exc, "reason", None) or exc
        raise InputError(f"cannot reach the package index to list the releases of {package}: {reason}") from None
    try:
        found = []
        for version, files in json.loads(body)["releases"].items():
            if files:  # a release whose files were all deleted cannot be installed
                found.append(Release(version, min(_utc(f["upload_time_iso_8601"]) for f in files),
                                     all(bool(f.get("yanked")) for f in files)))
        return found
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"the package index's answer about {package} is not the expected JSON ({type(exc).__name__}: {exc})") from None


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


try:
    from packaging.version import InvalidVersion, Version
except ImportError:  # not a dependency of the harness: usually present, never required
    Version = None

_PEP440 = re.compile(r"v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?"
                     r"(?:-(\d+)|[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+([a-z0-9.]+))?", re.I)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _pep440_key(version: str) -> tuple:
    """packaging's order when it is importable, else this module's own; a version neither can read sorts first."""
    if Version is not None:
        try:
            return (0, Version(version))
        except InvalidVersion:
            return (-1, version)
    return _own_pep440_key(version)


def _own_pep440_key(version: str) -> tuple:
    """PEP 440's order: dev < pre (a < b < rc) < release < post; trailing zeros do not count; local labels last."""
    match = _PEP440.fullmatch(version.strip())
    if match is None:
        return (-1, version)
    epoch, release_part, pre_label, pre_n, post_implicit, post_n, dev_n, local = match.groups()
    numbers = [int(n) for n in release_part.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    # A group that took part is a string (maybe empty: `1.0.post` is post 0); one that did not is None.
    post = post_implicit if post_implicit is not None else post_n
    if pre_label is not None:
        pre = (_PRE[pre_label.lower()], int(pre_n or 0))
    elif dev_n is not None and post is None:
        pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (3, 0)  # no pre-release: after every one
    post_key = (1, int(post or 0)) if post is not None else (0, 0)
    dev_key = (0, int(dev_n or 0)) if dev_n is not None else (1, 0)
    local_key = tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in re.split(r"[-_.]", local)) if local else ()
    return (0, int(epoch or 0), tuple(numbers), pre, post_key, dev_key, local_key)
