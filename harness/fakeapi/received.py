"""What a connection has received so far, read as a file by http_framing's strict reader.

The server (harness/fakeapi/server.py) serves every connection from one
thread that never blocks on a socket, so a request is parsed from the bytes
that have arrived. http_framing reads with readline and read, as from a
blocking socket; here a read that would need bytes not yet received raises
`NeedMore`, saying what must arrive before another attempt can get further,
and the attempt is made again from the start when it has. When the client
has closed (or fell silent past the server's timeout, or its connection
failed) a short read is what a blocking socket would have given: the same
Closed and Malformed outcomes, with the same reasons, as before.
"""

from __future__ import annotations


class NeedMore(Exception):
    """The request goes on past what has arrived: try again once `ready(received)` says more has come."""

    def __init__(self, at_least: int, newline_after: int | None = None):
        super().__init__(at_least)
        self.at_least = at_least  # this many bytes received in all, or
        self.newline_after = newline_after  # a newline received at or after this offset

    def ready(self, data: bytearray) -> bool:
        if len(data) >= self.at_least:
            return True
        return self.newline_after is not None and data.find(b"\n", self.newline_after) >= 0


class Received:
    """A file-like view of `data` from offset 0; `pos` is how far a parse attempt has read."""

    def __init__(self, data: bytearray, *, ended: bool = False, silent: bool = False,
                 failure: OSError | None = None):
        self._data = data
        self._ended = ended  # the client closed its side: nothing more will come
        self._silent = silent  # nothing came for the server's timeout: a blocking read would have timed out
        self._failure = failure  # receiving failed (a reset): a blocking read would have raised it
        self.pos = 0

    def _short(self, need: NeedMore) -> None:
        """Called when what has arrived ends before what is asked: raise as a blocking socket would, or NeedMore."""
        if self._failure is not None:
            raise self._failure
        if self._ended:
            return  # a short read, as at the end of a file
        if self._silent:
            raise TimeoutError("no bytes within the server's timeout")
        raise need

    def readline(self, limit: int) -> bytes:
        end = self._data.find(b"\n", self.pos, self.pos + limit)
        if end >= 0:
            stop = end + 1
        elif len(self._data) - self.pos >= limit:
            stop = self.pos + limit
        else:
            self._short(NeedMore(self.pos + limit, newline_after=len(self._data)))
            stop = len(self._data)
        line = bytes(self._data[self.pos:stop])
        self.pos = stop
        return line

    def read(self, size: int) -> bytes:
        stop = self.pos + size
        if stop > len(self._data):
            self._short(NeedMore(stop))
            stop = len(self._data)
        piece = bytes(self._data[self.pos:stop])
        self.pos = stop
        return piece
