"""Failures of the reference agent, each carrying the exit code it maps to.

The harness reads exit codes as part of its verdict, so the mapping lives in
one place: 2 means "you called me wrong", 1 means "the run itself failed".
"""

from __future__ import annotations


class AgentError(Exception):
    """A run that cannot complete; the message is printed on stderr."""

    exit_code = 1


class UsageError(AgentError):
    """Bad flags or environment: the caller's mistake, never the model's."""

    exit_code = 2


class SessionNotFound(AgentError):
    """`--resume` named a session that was never saved under this HOME."""

    def __init__(self, session_id: str):
        super().__init__(f"no such session: {session_id}")
        self.session_id = session_id


class ApiError(AgentError):
    """The API answered with an error status, an error event, or not at all."""


class ProtocolError(ApiError):
    """The API answered, but not in the Anthropic wire format we were promised."""


class ToolLoopLimit(AgentError):
    """The model kept asking for tools past the per-turn request budget."""


class CompactionError(AgentError):
    """The model would not produce a <summary> even when asked twice."""
