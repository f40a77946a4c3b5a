"""What a scripted reply can be instead of a clean answer: an HTTP error (`error:`) or a broken transport (`fault:`).

Read for a step's `error:` (every request fails) and for a turn's `error:` or
`fault:` (one request fails); harness/fakeapi/faults.py says what each fault
puts on the wire.
"""

from __future__ import annotations

import math
from typing import Any

from harness.documents.located import child_path, describe, unknown_key_error
from harness.documents.reader import Reader
from harness.errors import InputError
from harness.scenario.model import FAULT_KINDS, MAX_FAULT_SECONDS, ApiError, Fault

_ERROR_KEYS = ("status", "type", "message", "retry_after")
# The settings of each fault kind besides `kind` (all required).
_FAULT_SETTINGS = {"cut_stream": ("after_events",), "reset": (), "slow_first_byte": ("seconds",), "malformed_sse": ()}
# The provider's own error type for each status, so an agent's error handling sees what it would in the field.
_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FailureReader:
    """Reads `error:` and `fault:` mappings; errors name ``file``'s path."""

    def __init__(self, file: Reader):
        self.file = file

    def fault(self, value: Any, line: int | None, where: str) -> Fault:
        kinds = ", ".join(FAULT_KINDS)
        if isinstance(value, str) and value in FAULT_KINDS:
            raise self.file.error(
                f"expected a mapping with 'kind' ({kinds}), got {describe(value)}; write '{{kind: {value}}}'", line, where
            )
        f = self.file.mapping(value, line, where, f"a mapping with 'kind' ({kinds}) and the kind's settings")
        kind_value = self.file.require(f, "kind", where)
        kind_where = child_path(where, "kind")
        if not isinstance(kind_value, str):
            raise self.file.error(f"expected a fault kind ({kinds}), got {describe(kind_value)}", f.key_line("kind"), kind_where)
        if kind_value not in FAULT_KINDS:
            raise unknown_key_error(
                kind_value, FAULT_KINDS, self.file.path, f.key_line("kind"), kind_where, what="fault kind", listing="known kinds"
            )
        kind = kind_value
        settings = _FAULT_SETTINGS[kind]
        for key in f:
            if key == "kind" or key in settings:
                continue
            if any(key in other for other in _FAULT_SETTINGS.values()):
                takes = ", ".join(("kind", *settings))
                raise self.file.error(f"{key!r} is not a setting of a {kind} fault (it takes: {takes})", f.key_line(key), where)
            raise unknown_key_error(key, ("kind", *settings), self.file.path, f.key_line(key), where)
        for key in settings:
            self.file.require(f, key, where)
        if kind == "cut_stream":
            n = f["after_events"]
            n_where = child_path(where, "after_events")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise self.file.error(
                    f"expected a positive integer (events sent before the cut), got {describe(n)}",
                    f.key_line("after_events"),
                    n_where,
                )
            return Fault(kind, after_events=int(n))
        if kind == "slow_first_byte":
            seconds = self.file.positive_number(f["seconds"], f.key_line("seconds"), child_path(where, "seconds"))
            if seconds > MAX_FAULT_SECONDS:
                raise self.file.error(
                    f"expected at most {MAX_FAULT_SECONDS:g} seconds, got {seconds:g}",
                    f.key_line("seconds"),
                    child_path(where, "seconds"),
                )
            return Fault(kind, seconds=seconds)
        return Fault(kind)

    def api_error(self, value: Any, line: int | None, where: str) -> ApiError:
        e = self.file.mapping(value, line, where, "a mapping with status, type, message")
        for key in e:
            if key not in _ERROR_KEYS:
                message = unknown_key_error(key, _ERROR_KEYS, self.file.path, e.key_line(key), where).message
                # the error shape's own keys first, then the header's
                message = message.replace("message, retry_after, status, type", "message, status, type, retry_after")
                raise InputError(message, self.file.path, e.key_line(key))
        status = self.file.require(e, "status", where)
        status_where = child_path(where, "status")
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise self.file.error(f"expected an HTTP error status (400-599), got {describe(status)}", e.key_line("status"), status_where)
        kind = self.file.optional_string(e, "type", where, non_empty=True) or _DEFAULT_ERROR_TYPES.get(status, "api_error")
        message = self.file.optional_string(e, "message", where, non_empty=True) or f"scripted error {status} from the harness"
        retry_after = None
        if "retry_after" in e:
            value, ra_where = e["retry_after"], child_path(where, "retry_after")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise self.file.error(
                    f"expected a non-negative number of seconds, got {describe(value)}", e.key_line("retry_after"), ra_where
                )
            retry_after = value if isinstance(value, float) else int(value)
        return ApiError(int(status), kind, message, retry_after)
