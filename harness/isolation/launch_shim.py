"""The recording shim: first on PATH under the agent binary's name, it reports each launch, then runs the real binary.

A launcher such as inspect_swe finds the agent CLI with `which claude` and
starts it itself, so the harness never sees those argv unless something sits in
between. This file, run as a script (standard library only, `python -I -S`),
is that something: it posts the launch (argv, environment, working directory,
pid) to the fake API's control path, runs the real binary as its child with
the same stdio, passes on the signals it gets, posts the exit code, and exits
with it. It does not exec the binary, because then nobody would see the exit.

A launch that cannot be recorded does not run: the shim prints why and exits
126, so an unjudgeable launch shows as an error, never as a silent pass.

`write_shim()` (harness side) puts a two-line sh script under the binary's
name into a folder the target puts first on PATH.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

CANNOT_RECORD = 126
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def write_shim(bin_dir: Path, name: str, real: list[str], control_url: str) -> Path:
    """An executable `bin_dir/name` that records each launch and runs `real` (an argv prefix) with its arguments."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / name
    argv = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "--control", control_url, "--name", name]
    for part in real:
        argv += ["--real", part]
    shim.write_text("#!/bin/sh\nexec " + shlex.join(argv) + ' -- "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return shim


def _post(url: str, payload: dict) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the fake API, never a proxy
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    with opener.open(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def _parse(args: list[str]) -> tuple[str, str, list[str], list[str]]:
    control, name, real = None, None, []
    while args and args[0] != "--":
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--control":
            control = value
        elif flag == "--name":
            name = value
        elif flag == "--real":
            real.append(value)
        else:
            raise SystemExit(f"harness launch shim: unknown option {flag}")
    if control is None or name is None or not real or not args:
        raise SystemExit("harness launch shim: usage: --control URL --name NAME --real ARG... -- [ARGS...]")
    return control, name, real, args[1:]


def main() -> int:
    control, name, real, args = _parse(sys.argv[1:])  # the launch is recorded under the name the launcher called
    try:
        started = _post(control, {"argv": [name, *args], "cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()})
    except Exception as exc:  # noqa: BLE001 - any failure to record means the launch must not run
        print(f"harness launch shim: cannot record the launch of {name} at {control}: {exc}; not running it",
              file=sys.stderr, flush=True)
        return CANNOT_RECORD
    child_pid = None
    try:
        child = subprocess.Popen([*real, *args])
    except OSError as exc:
        print(f"harness launch shim: cannot start {real[-1]}: {exc}", file=sys.stderr, flush=True)
        code = CANNOT_RECORD
    else:
        child_pid = child.pid
        for number in _FORWARDED:
            signal.signal(number, lambda signum, frame: child.send_signal(signum))
        code = child.wait()
    try:
        _post(f"{control}/{started['seq']}/end", {"exit_code": code, "pid": child_pid})
    except Exception as exc:  # noqa: BLE001 - the exit still goes to the launcher; the journal shows no end
        print(f"harness launch shim: cannot record the end of launch {started.get('seq')}: {exc}", file=sys.stderr, flush=True)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
