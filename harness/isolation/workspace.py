"""A disposable home for one scenario run, and the environment every step gets.

HOME, XDG_* and TMPDIR persist across the steps of one run (that is where an
agent keeps its session) and are fresh for each run. The environment is built
from an allow-list: provider keys, tokens, proxies and cloud credentials of the
person running the harness never reach the agent under test.

Each workspace says who made it (harness/isolation/workspace_owner.py), so the
workspaces of a harness that died before it could remove them are swept at the
next start (`sweep_stale_workspaces`). A workspace that cannot be made (a full
disk) is a WorkspaceError of one line, and nothing of it is left behind.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from harness.isolation import workspace_owner
from harness.isolation.workspace_owner import sweep_stale_workspaces  # noqa: F401 - called at the start of every command

FAKE_API_KEY = "sk-ant-harness-fake-key-0000"
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_INHERITED = re.compile(r"^(PATH|LANG|LANGUAGE|LC_[A-Z_]+|TERM|TZ|USER|LOGNAME|SHELL|SYSTEMROOT)$")


class WorkspaceError(Exception):
    """The run's workspace could not be made (a full disk, a read-only or missing temporary folder): one line."""


@dataclass
class Workspace:
    root: Path

    @classmethod
    def create(cls, label: str, parent: Path | None = None, keep: bool = False) -> "Workspace":
        """`keep`: the run keeps it (--keep-workspace): marked so, never swept, whoever made it and whenever."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:60]
        where = parent if parent is not None else workspace_owner.temporary_folder()
        try:
            root = Path(tempfile.mkdtemp(prefix=f"harness-{safe}-", dir=where))
        except OSError as exc:
            raise WorkspaceError(f"cannot make a workspace in {where}: {exc.strerror or exc}") from None
        workspace = cls(root)
        try:
            workspace_owner.mark(root, keep)  # first: a workspace half made when its harness died is swept too
            for folder in (workspace.home, workspace.workdir, workspace.tmp, workspace.logs, *workspace.xdg.values()):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            workspace.remove()
            raise WorkspaceError(f"cannot make a workspace in {where}: {exc.strerror or exc} "
                                 f"(nothing of it was left there)") from None
        return workspace

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def xdg(self) -> dict[str, Path]:
        return {
            "XDG_CONFIG_HOME": self.home / ".config",
            "XDG_DATA_HOME": self.home / ".local" / "share",
            "XDG_STATE_HOME": self.home / ".local" / "state",
            "XDG_CACHE_HOME": self.home / ".cache",
        }

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def step_environment(workspace: Workspace, base_url: str, extra: Mapping[str, str],
                     inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    inherited = os.environ if inherited is None else inherited
    env = {k: v for k, v in inherited.items() if _INHERITED.match(k)}
    env.update({k: str(v) for k, v in workspace.xdg.items()})
    env.update(
        HOME=str(workspace.home),
        TMPDIR=str(workspace.tmp),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=FAKE_API_KEY,
        OPENAI_BASE_URL=base_url + "/v1",
        OPENAI_API_KEY=FAKE_API_KEY,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    # Anything meant for another host goes to the fake API instead, which journals and refuses it.
    for name in _PROXY_VARIABLES:
        env[name] = base_url
    env.update(extra)
    return env
