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
import threading
import urllib.request
from pathlib import Path

CANNOT_RECORD = 126
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def write_shim(bin_dir: Path, name: str, real: list[str], control_url: str, *, relay_stdin: bool = False) -> Path:
    """An executable `bin_dir/name` that records each launch and runs `real` (an argv prefix) with its arguments.

    `relay_stdin`: the launcher configures the agent over its stdin (the TypeScript Agent SDK sends its system
    prompt in a stream-json `initialize` control request, not in argv): the shim relays stdin line by line and
    records each such request with the launch before the agent reads it.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / name
    argv = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "--control", control_url, "--name", name]
    if relay_stdin:
        argv += ["--relay-stdin", "initialize"]
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


def _parse(args: list[str]) -> tuple[str, str, list[str], str | None, list[str]]:
    control, name, real, relay = None, None, [], None
    while args and args[0] != "--":
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--control":
            control = value
        elif flag == "--name":
            name = value
        elif flag == "--real":
            real.append(value)
        elif flag == "--relay-stdin":
            relay = value
        else:
            raise SystemExit(f"harness launch shim: unknown option {flag}")
    if control is None or name is None or not real or not args:
        raise SystemExit("harness launch shim: usage: --control URL --name NAME --real ARG... "
                         "[--relay-stdin SUBTYPE] -- [ARGS...]")
    return control, name, real, relay, args[1:]


def _control_request(line: bytes, subtype: str) -> dict | None:
    """The request of a stream-json control request of this subtype, or None for any other line."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("type") == "control_request":
        request = message.get("request")
        if isinstance(request, dict) and request.get("subtype") == subtype:
            return request
    return None


def _relay(source, sink, record) -> None:
    """Copy the launcher's lines to the agent, recording the configuring ones first; EOF closes the agent's stdin.

    A request that cannot be recorded is not passed on: the agent would run configured by text nobody journaled.
    """
    try:
        for line in iter(source.readline, b""):
            if not record(line):
                break
            sink.write(line)
            sink.flush()
    except (BrokenPipeError, OSError):
        pass  # the agent exited; its exit code says the rest
    finally:
        try:
            sink.close()
        except OSError:
            pass


def main() -> int:
    control, name, real, relay, args = _parse(sys.argv[1:])  # the launch is recorded under the name the launcher called
    try:
        started = _post(control, {"argv": [name, *args], "cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()})
    except Exception as exc:  # noqa: BLE001 - any failure to record means the launch must not run
        print(f"harness launch shim: cannot record the launch of {name} at {control}: {exc}; not running it",
              file=sys.stderr, flush=True)
        return CANNOT_RECORD
    child_pid = None
    try:
        child = subprocess.Popen([*real, *args], stdin=subprocess.PIPE if relay else None)
    except OSError as exc:
        print(f"harness launch shim: cannot start {real[-1]}: {exc}", file=sys.stderr, flush=True)
        code = CANNOT_RECORD
    else:
        child_pid = child.pid
        for number in _FORWARDED:
            signal.signal(number, lambda signum, frame: child.send_signal(signum))
        if relay:
            def record(line: bytes) -> bool:
                request = _control_request(line, relay)
                if request is None:
                    return True
                try:
                    _post(f"{control}/{started['seq']}/control", {"request": request})
                    return True
                except Exception as exc:  # noqa: BLE001 - unrecorded configuration must not reach the agent
                    print(f"harness launch shim: cannot record the {relay} request of launch {started.get('seq')}: "
                          f"{exc}; not passing it on", file=sys.stderr, flush=True)
                    child.kill()
                    return False

            threading.Thread(target=_relay, args=(sys.stdin.buffer, child.stdin, record), daemon=True).start()
        code = child.wait()
    try:
        _post(f"{control}/{started['seq']}/end", {"exit_code": code, "pid": child_pid})
    except Exception as exc:  # noqa: BLE001 - the exit still goes to the launcher; the journal shows no end
        print(f"harness launch shim: cannot record the end of launch {started.get('seq')}: {exc}", file=sys.stderr, flush=True)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
