"""Whether a request came from the running step, or from another local process: the `foreign` class.

The fake API listens on 127.0.0.1, where any local program can POST to it. A
request it took for the agent's would be judged as the agent's and consume
the step's scripted turns: one stray client flips every check on a clean
agent. So, during a step, a request's sender is checked before it is served:

- a step in a network namespace of its own (harness/isolation/netns.py) reaches the fake
  API only through the listener adopted from that namespace; a connection on
  the host's listener meanwhile is not the step's, whoever sent it;
- otherwise (namespaces off or unavailable) the sending pid decides
  (harness/fakeapi/peer.py): the step's root process, a descendant, its
  session, or a PID namespace it made.

A foreign request is journaled and refused (403 in the provider's error
shape), never judged: an agent request misclassified so errors visibly
rather than passing. Where the sender cannot be found, the request is served
as before and its exchange says so (SENDER_NOT_FOUND); outside any step, and
in-process (no socket), nothing changes.
"""

from __future__ import annotations

from harness.fakeapi import peer
from harness.fakeapi.transport import HOST_LISTENER, HTTPRequest

# The first note of a foreign exchange says why; these are its two forms.
FOREIGN_ON_HOST = ("foreign: arrived on the host's listener while the step runs in a network namespace of its own, "
                   "where only the step's processes can connect; refused, not judged")
FOREIGN_OUTSIDE_STEP = ("foreign: sent by pid {pid}, which is not the step's (root pid {root}: not it, not a descendant, "
                        "not in its session or PID namespace); refused, not judged")
FOREIGN_ERROR = "refused: sent by a process that is not the running step's"
# A note on an exchange sent over a socket during a step whose sending pid could not be found (served as before).
SENDER_NOT_FOUND = "the sending process could not be found"


def foreign_reason(request: HTTPRequest, step_pid: int | None, step_namespaced: bool) -> str | None:
    """Why `request`, sent during a step, is not that step's; None when it is, or cannot be told apart."""
    if request.listener != HOST_LISTENER:
        return None  # in-process, or through the step's own namespace
    if step_namespaced:
        return FOREIGN_ON_HOST
    if step_pid is None or request.peer_pid is None:
        return None
    if _belongs_to_step(request, step_pid) is not False:  # the step's, or gone before it could be read
        return None
    return FOREIGN_OUTSIDE_STEP.format(pid=request.peer_pid, root=step_pid)


def _belongs_to_step(request: HTTPRequest, step_pid: int) -> bool | None:
    """peer.belongs_to_step, read from /proc once per connection and step.

    A connection's sender is looked up once (server.py), and it cannot join another process's session or tree
    afterwards (nor leave the step's, for a helper that detaches is still the step's); a new step has another
    root pid, so it is asked again. Asked for every request, those /proc reads were a dozen system calls per
    reply, each one handing the interpreter lock to another connection (`make bench`, issue 23).
    """
    known = request.step_membership
    if known is None:
        return peer.belongs_to_step(request.peer_pid, step_pid)
    if step_pid not in known:
        known[step_pid] = peer.belongs_to_step(request.peer_pid, step_pid)
    return known[step_pid]


def sender_unknown(request: HTTPRequest) -> bool:
    """Sent over a socket whose holder was not found: the exchange's pid stays None and its notes say why."""
    return request.listener is not None and request.peer_pid is None
