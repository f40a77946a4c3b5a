"""What a step's network namespace counted: the attempts to reach elsewhere that the kernel made fail.

The namespace (harness/isolation/netns.py) refuses every other host and port; the
harness cannot see where an agent tried to connect, only the kernel's counters in
that namespace's /proc/net/snmp and snmp6, read when the step ends.
"""

from __future__ import annotations

import os
from typing import Sequence


def read_counters(fds: Sequence[int]) -> dict[str, int]:
    """The namespace's /proc/net/snmp ("Ip: names" / "Ip: values" line pairs) and snmp6 ("Name value" lines)."""
    counters: dict[str, int] = {}
    for fd in fds:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = b"".join(iter(lambda: os.read(fd, 65536), b"")).decode("ascii", errors="replace")
        except OSError:
            continue
        lines = text.splitlines()
        if lines and ":" in lines[0]:
            for names, values in zip(lines[::2], lines[1::2]):
                prefix, names = names.split(":", 1)
                for name, value in zip(names.split(), values.split(":", 1)[-1].split()):
                    counters[f"{prefix}.{name}"] = int(value)
        else:
            for line in lines:
                parts = line.split()
                if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                    counters[parts[0]] = int(parts[1])
    return counters


def attempts_note(counters: dict[str, int]) -> str | None:
    """What failed inside the namespace; the kernel counts, the harness cannot see where to."""
    no_route = counters.get("Ip.OutNoRoutes", 0) + counters.get("Ip6OutNoRoutes", 0)
    refused = counters.get("Tcp.AttemptFails", 0)
    closed = counters.get("Udp.NoPorts", 0) + counters.get("Udp6NoPorts", 0)
    parts = []
    if no_route:
        parts.append(f"{no_route} direct attempt(s) to reach another host failed at once (no route; DNS lookups included)")
    if refused:
        parts.append(f"{refused} TCP connection attempt(s) to another loopback port refused")
    if closed:
        parts.append(f"{closed} datagram(s) to a closed loopback port")
    return "network namespace: " + "; ".join(parts) if parts else None
