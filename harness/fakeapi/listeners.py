"""What the server's event loop listens to besides its own listener: a listener adopted from a step's network
namespace, and the wake-up pipe that makes a waiting loop act at once.

A step in a network namespace of its own (harness/isolation/netns.py) hands over a
listener created there; its connections are accepted by the server's event
loop and served like its own (script, journal), with the sending pid looked
up in that namespace's tables. While one is open the fake API
knows a namespaced step is running (FakeModelAPI.step_listener_opened): only
that step's processes can reach this listener, so a connection on the host's
is not the step's (harness/fakeapi/sender.py).
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from harness.fakeapi.peer import NamespaceTables

if TYPE_CHECKING:
    from harness.fakeapi.server import EventLoop


class Wakeup:
    """A pipe a polling loop also watches, so that stopping it takes effect at once, not at its next timeout.

    Stopping used to wait out the loops' 50 ms polls: about a tenth of a reference-agent scenario's wall
    time went to that (up to 50 ms per step for the namespace's listener, up to 50 ms per run for the server).
    """

    def __init__(self) -> None:
        self.fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)

    def wake(self) -> None:
        try:
            os.write(self._write_fd, b"x")
        except (BlockingIOError, OSError):  # already woken (the pipe is full), or closed
            pass

    def drain(self) -> None:
        try:
            os.read(self.fd, 4096)
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self.fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


class AdoptedListener:
    """One listening socket handed to the server (FakeAPIServer.adopt_listener), accepted on by its event loop."""

    def __init__(self, loop: "EventLoop", listener: socket.socket, tables: NamespaceTables | None):
        self._loop, self._closed = loop, False
        loop.api.step_listener_opened()  # from now on, the host's listener is not the step's way in
        self._listening = loop.adopt(listener, tables)

    def close(self) -> None:
        """Stop accepting and close the listener; open connections finish on their own."""
        if self._closed:
            return
        self._closed = True
        self._loop.api.step_listener_opened(False)
        self._loop.give_back(self._listening)
