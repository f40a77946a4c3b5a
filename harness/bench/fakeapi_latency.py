"""What the fake API adds to a streamed reply, and how many replies it serves, on loopback.

The request is the reference agent's own first request of a real run
(streamed, its system prompt and cache breakpoint included), answered from a
scripted turn, journaled to disk as in any run. "Added latency" is the time
from the request's first byte sent to the reply's last byte received, minus
the same against a baseline: a trivial server on loopback that reads the
request and sends back the very bytes the fake API sent for it, precomputed,
in one write. The difference is what parsing, classifying, caching,
journaling and writing the stream cost; the baseline is what loopback and
the client cost anyway. Both raw figures are reported as well.

The client is a separate process (harness/bench/loopback_client.py), the
servers take turns reply by reply, and the fake API is told the client's pid
as the runner tells it a step's, so its sending-process lookup starts there.

Throughput is replies per second with 1, 4 and 16 concurrent keep-alive
clients, each figure beside the baseline's at the same count (the client's own
ceiling: what it gets from a server that costs nothing) and as a ratio to the
fake API's one-client figure of the same run.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

from harness.bench import loopback_client
from harness.bench.stats import median, percentile, summary
from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.script import text_turn
from harness.fakeapi.server import FakeAPIServer
from harness.run.session import LiveRun
from harness.scenario.model import Step
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target
from harness.isolation.workspace import FAKE_API_KEY

CLIENT = Path(loopback_client.__file__)
REPLY = "42"
SCRIPTED_TURNS = 500_000  # more than any measurement asks for: every reply is a scripted one
# and the loop cap lifted as far: with a run's cap (100) every reply past the 100th was a short 400, not a stream,
# and the loopback client now refuses any reply but a 200 (loopback_client.exchange).


def agent_request(checkout: Path) -> bytes:
    """The body of the reference agent's first request in retry-after-wrong-answer, as it reached the fake API."""
    scenario = load_scenario(checkout / "scenarios" / "retry-after-wrong-answer.yaml")
    first = scenario.steps[0]
    target, = resolve_target("reference")
    with LiveRun(scenario, target) as run:
        result = run.run_step(first)
        if result.error:
            raise RuntimeError(f"the reference agent's launch failed: {result.error}")
        body = run.exchanges()[0].body
    if b'"stream": true' not in body and b'"stream":true' not in body:
        raise RuntimeError("the reference agent's request is not a streamed one")
    return body


def request_template(body: bytes) -> bytes:
    head = (
        "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept-Encoding: identity\r\n"
        f"Content-Type: application/json\r\nanthropic-version: 2023-06-01\r\nx-api-key: {FAKE_API_KEY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class BaselineServer:
    """Loopback, a thread per connection, and one precomputed reply sent whole to every request."""

    def __init__(self, reply: bytes):
        self.reply = reply
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="bench-baseline").start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buffer) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                buffer = buffer[length:]
                conn.sendall(self.reply)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


def _fake_api(journal_path: Path) -> tuple[FakeModelAPI, FakeAPIServer]:
    api = FakeModelAPI(Journal(journal_path))
    api.begin_step(Step(index=1, kind="launch", prompt="What is 6*7?", turns=(text_turn(REPLY),) * SCRIPTED_TURNS),
                   max_requests=SCRIPTED_TURNS)
    return api, FakeAPIServer(api).start()


def _close(api: FakeModelAPI, server: FakeAPIServer) -> None:
    api.end_step()
    server.stop()
    api.journal.close()


def _captured_reply(port: int, template: bytes) -> bytes:
    """The fake API's whole reply to the request, as the wire carried it: the baseline's precomputed bytes."""
    with loopback_client.connect(port) as sock:
        request = loopback_client.request_bytes(template, port)
        sock.sendall(request)
        buffer = b""
        while not buffer.endswith(b"\r\n0\r\n\r\n"):
            data = sock.recv(65536)
            if not data:
                break
            buffer += data
    if not buffer.startswith(b"HTTP/1.1 200") or b"message_stop" not in buffer:
        raise RuntimeError(f"the fake API did not stream a reply: {buffer[:200]!r}")
    return buffer


def _client(config: dict, api: FakeModelAPI | None) -> dict:
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(CLIENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if api is not None:
        api.set_step_pid(proc.pid)  # as the runner tells the fake API a step's pid
    out, err = proc.communicate(json.dumps(config), timeout=600)
    if proc.returncode:
        raise RuntimeError(f"the loopback client failed: {err.strip()[-500:]}")
    return json.loads(out)


def measure(scratch: Path, checkout: Path, count: int, fresh_count: int, clients: list[int], duration_s: float,
            progress: Callable[[str], None] = lambda line: None) -> dict:
    template = request_template(agent_request(checkout))
    encoded = base64.b64encode(template).decode()
    api, server = _fake_api(scratch / "latency-journal.jsonl")
    try:
        reply = _captured_reply(server.port, template)
        baseline = BaselineServer(reply)
        try:
            result = {"request_bytes": len(template), "reply_bytes": len(reply),
                      "reply_events": reply.count(b"\nevent: ") + reply.count(b"\r\nevent: ")}
            servers = {"fake": server.port, "baseline": baseline.port}
            raw = _client({"mode": "latency", "servers": servers, "request": encoded, "count": count,
                           "warmup": min(100, count)}, api)
            result["keep_alive"] = _latency_figures(raw)
            progress(_said("keep-alive", result["keep_alive"]))
            before = _tcp_sockets()
            raw = _client({"mode": "fresh", "servers": servers, "request": encoded, "count": fresh_count,
                           "warmup": min(20, fresh_count)}, api)
            result["new_connection"] = _latency_figures(raw)
            result["new_connection"]["host_tcp_sockets"] = [before, _tcp_sockets()]  # TIME_WAITs pile up as it runs
            progress(_said("new connection each", result["new_connection"]))
        finally:
            baseline.close()
    finally:
        _close(api, server)
    result["throughput"] = _throughput(scratch, reply, encoded, clients, duration_s, progress)
    return result


def _tcp_sockets() -> int | None:
    """Entries in the host's TCP tables: the fake API reads them on every new connection (peer.py), at a cost
    that grows with them (about 5 ms per thousand here), so the new-connection figure depends on it."""
    try:
        return sum(len(Path(table).read_bytes().splitlines()) - 1 for table in ("/proc/net/tcp", "/proc/net/tcp6"))
    except OSError:
        return None


def _latency_figures(raw: dict) -> dict:
    fake = [ns / 1e6 for ns in raw["fake"]]
    base = [ns / 1e6 for ns in raw["baseline"]]
    return {
        "replies": len(fake),
        "fake_ms": summary(fake, 4),
        "baseline_ms": summary(base, 4),
        "added_median_ms": round(median(fake) - median(base), 4),
        "added_p99_ms": round(percentile(fake, 99) - percentile(base, 99), 4),
    }


def _said(what: str, figures: dict) -> str:
    return (f"{what}: fake API median {figures['fake_ms']['median']:.3f} ms (p99 {figures['fake_ms']['p99']:.3f}), "
            f"baseline {figures['baseline_ms']['median']:.3f} ms (p99 {figures['baseline_ms']['p99']:.3f}); "
            f"added median {figures['added_median_ms']:.3f} ms, p99 {figures['added_p99_ms']:.3f} ms "
            f"over {figures['replies']} replies")


THROUGHPUT_ROUNDS = 2


def _throughput(scratch: Path, reply: bytes, encoded: str, clients: list[int], duration_s: float,
                progress: Callable[[str], None]) -> list[dict]:
    """Replies per second with each number of concurrent keep-alive clients; the median of THROUGHPUT_ROUNDS.

    Round by round over the client counts (forwards, then backwards) and, within each, fake API and baseline
    alternating: a load that drifts during the run (a shared machine) weighs on every count alike, so the
    figures of one run can be compared with each other (`fake_vs_one_client`, issue 23: 16 clients must be
    served at least as fast as one).
    """
    rates = {k: {"fake": [], "baseline": []} for k in clients}
    for number in range(THROUGHPUT_ROUNDS):
        for k in (clients if number % 2 == 0 else clients[::-1]):
            for name in (("fake", "baseline") if number % 2 == 0 else ("baseline", "fake")):
                rates[k][name].append(_rate(scratch / f"throughput-{k}-{number}.jsonl", reply, encoded, name, k,
                                            duration_s))
    figures = []
    for k in clients:
        figures.append({"clients": k, "duration_s": duration_s, "rounds": THROUGHPUT_ROUNDS,
                        "fake_replies_per_s": round(median(rates[k]["fake"]), 1),
                        "baseline_replies_per_s": round(median(rates[k]["baseline"]), 1)})
    one = next((f["fake_replies_per_s"] for f in figures if f["clients"] == 1), None)
    for entry in figures:
        if one:
            entry["fake_vs_one_client"] = round(entry["fake_replies_per_s"] / one, 3)
        versus = f" (×{entry['fake_vs_one_client']:.2f} of one client's)" if one and entry["clients"] != 1 else ""
        progress(f"throughput, {entry['clients']} concurrent client(s): fake API {entry['fake_replies_per_s']:.0f} "
                 f"replies/s{versus}, baseline {entry['baseline_replies_per_s']:.0f} replies/s")
    return figures


def _rate(journal: Path, reply: bytes, encoded: str, name: str, clients: int, duration_s: float) -> float:
    """One measurement: `clients` keep-alive clients for `duration_s` against a fresh fake API or baseline server."""
    if name == "fake":
        api, server = _fake_api(journal)
        port = server.port
    else:
        api, baseline = None, BaselineServer(reply)
        port = baseline.port
    try:
        got = _client({"mode": "throughput", "port": port, "request": encoded, "clients": clients,
                       "duration_s": duration_s}, api)
    finally:
        if name == "fake":
            _close(api, server)
        else:
            baseline.close()
    return got["replies"] / got["seconds"]
