"""A temporary folder already full: the workspace cannot be made, one line says why, and nothing of it is left.

For real: a tiny tmpfs, mounted in a mount namespace of the test's own
(`unshare --mount`, so nothing of it is seen outside), is filled, and
Workspace.create runs with TMPDIR pointing into it: once where the folder
itself can still be made but its first file cannot (no space), once where not
even the folder can (no inodes left).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

# Inside the namespace: mount the tmpfs, fill it, try to make a workspace there, list what is left.
INSIDE = r'''
set -e
mount -t tmpfs -o "$2" harness-full "$1"
head -c 4194304 /dev/zero > "$1/filler" 2>/dev/null || true
i=0; while [ "$3" = inodes ] && touch "$1/inode-$i" 2>/dev/null; do i=$((i+1)); done
TMPDIR="$1" "$4" -c '
import json, os, sys
from harness.isolation.workspace import Workspace, WorkspaceError
try:
    Workspace.create("full-disk-scenario-target")
    said = None
except WorkspaceError as exc:
    said = str(exc)
left = sorted(name for name in os.listdir(sys.argv[1]) if name.startswith("harness-"))
print(json.dumps({"error": said, "left": left}))
' "$1"
'''


@pytest.mark.parametrize("full", ["space", "inodes"])
def test_a_full_temporary_folder_is_one_line_and_leaves_no_half_made_workspace(tmp_path, full):
    if shutil.which("unshare") is None:
        pytest.fail("this test needs unshare (util-linux) to mount a tiny tmpfs where only it sees it")
    mount_point = tmp_path / "full"
    mount_point.mkdir()
    options = "size=1m" if full == "space" else "size=1m,nr_inodes=16"
    become_root = [] if os.geteuid() == 0 else ["--map-root-user"]
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", *become_root, "sh", "-c", INSIDE, "sh",
         str(mount_point), options, full, sys.executable],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["left"] == [], f"a half-made workspace was left in the full folder: {seen['left']}"
    error = seen["error"]
    assert error is not None, "the workspace was made in a full folder"
    assert "\n" not in error and error.startswith(f"cannot make a workspace in {mount_point}: "), error
    assert "No space left on device" in error, error
    assert os.listdir(mount_point) == []  # the tmpfs was the namespace's: the host's folder never saw it
