"""The fake API's control path for the recording shim: launches reported over HTTP into the launch journal.

The shim (harness/isolation/launch_shim.py) runs where the launcher runs: in the step's
network namespace, where the fake API's address is the only one reachable.
So it reports there, on a path no model API has, and its reports never enter
the request journal: `POST /_harness/launches` (argv, cwd, env, pid) answers
the launch's number; `POST /_harness/launches/N/control` records a control request
the launcher wrote on the agent's stdin (the TypeScript SDK's `initialize`, which
carries its system prompt); `POST /_harness/launches/N/end` records its exit code.

`step_of_new_launch` lets a run whose steps are launches of one launcher
process move the fake API's script to the next step before the launch's first
request; `on_ended` closes that step and reports it as its launch ends.
"""

from __future__ import annotations

import json
from typing import Callable

from harness.fakeapi.core import HTTPRequest, HTTPResponse
from harness.journal.launches import SHIM, Launch, LaunchJournal

CONTROL_PATH = "/_harness/launches"  # where the recording shim (harness/isolation/launch_shim.py) reports launches

StepOf = Callable[[], "tuple[int | None, str | None]"]  # the step (index, kind) a new launch belongs to


class LaunchControl:
    def __init__(self, journal: LaunchJournal, step_of_new_launch: StepOf, on_ended: Callable[[Launch], None] | None = None):
        self.journal = journal
        self._step_of = step_of_new_launch
        self._on_ended = on_ended

    def handle(self, request: HTTPRequest, path: str) -> HTTPResponse:
        try:
            payload = json.loads(request.body or b"{}")
            if not isinstance(payload, dict):
                raise ValueError("the body is not a JSON object")
            if request.method == "POST" and path == CONTROL_PATH:
                return _answer(200, self._start(payload))
            head, _, tail = path.rpartition("/")
            if request.method == "POST" and tail in ("end", "control") and head.startswith(CONTROL_PATH + "/"):
                seq = int(head[len(CONTROL_PATH) + 1:])
                if not 1 <= seq <= len(self.journal.launches()):
                    raise ValueError(f"no launch number {seq}")
                if tail == "control":
                    if not isinstance(payload.get("request"), dict):
                        raise ValueError("expected the control request as an object under 'request'")
                    self.journal.control(seq, payload["request"])
                    return _answer(200, {"seq": seq})
                launch = self.journal.finish(seq, _int_or_none(payload.get("exit_code")), _int_or_none(payload.get("pid")))
                if self._on_ended is not None:
                    self._on_ended(launch)
                return _answer(200, {"seq": launch.seq})
        except (ValueError, KeyError, TypeError) as exc:
            return _answer(400, {"error": f"bad launch report to {path}: {exc}"})
        return _answer(404, {"error": f"{request.method} {path} is not a launch-journal path"})

    def _start(self, payload: dict) -> dict:
        argv, cwd, env = payload["argv"], payload["cwd"], payload.get("env") or {}
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str) and isinstance(env, dict)):
            raise ValueError("expected argv (list of strings), cwd (string) and env (object)")
        step, kind = self._step_of()
        launch = self.journal.start(argv, cwd, {str(k): str(v) for k, v in env.items()}, step=step, step_kind=kind,
                                    pid=_int_or_none(payload.get("pid")), recorded_by=SHIM)
        return {"seq": launch.seq, "step": step}


def _int_or_none(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _answer(status: int, payload: dict) -> HTTPResponse:
    return HTTPResponse(status, [("content-type", "application/json")], body=json.dumps(payload).encode())
