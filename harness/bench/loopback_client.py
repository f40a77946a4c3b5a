"""The client side of the fake API measurements: raw sockets in a process of its own, standard library only.

A separate process, so that the server being measured and the client timing
it never wait for the same interpreter lock; raw sockets, so that the client's
own parsing costs next to nothing and the same for both servers. Run as a
script: a JSON request on stdin, a JSON answer on stdout.

  {"mode": "latency", "servers": {"fake": PORT, "baseline": PORT}, "request": B64, "count": N, "warmup": W}
      keep-alive, one connection per server, the servers taking turns reply by reply:
      {"fake": [ns, ...], "baseline": [ns, ...]}, time from the first request byte sent to the last reply byte
  {"mode": "fresh", ...the same...}
      as latency, but each reply on a new connection (connect and close included)
  {"mode": "throughput", "port": PORT, "request": B64, "clients": K, "duration_s": D}
      K threads, each with its own keep-alive connection, as fast as replies come back:
      {"replies": n, "seconds": s}
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
import time

HOST = "127.0.0.1"
_CHUNKED_END = b"\r\n0\r\n\r\n"


def request_bytes(template: bytes, port: int) -> bytes:
    """The request with its Host header naming this port ({port} in the template)."""
    return template.replace(b"{port}", str(port).encode())


def connect(port: int) -> socket.socket:
    sock = socket.create_connection((HOST, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client and httpx do
    return sock


def exchange(sock: socket.socket, request: bytes) -> int:
    """Send one request and read its whole reply; the reply's length in bytes.

    Anything but a 200 raises: a figure made of refusals (a loop cap, a foreign sender) would measure those."""
    sock.sendall(request)
    buffer = bytearray()
    header_end, length, chunked = -1, None, False
    while True:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection before the reply ended")
        buffer += data
        if header_end < 0:
            header_end = buffer.find(b"\r\n\r\n")
            if header_end < 0:
                continue
            if not buffer.startswith(b"HTTP/1.1 200 "):
                raise ValueError(f"not a 200 reply: {bytes(buffer[:80])!r}")
            for line in bytes(buffer[:header_end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value.strip())
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
        body = len(buffer) - header_end - 4
        if chunked:
            if buffer.endswith(_CHUNKED_END) or (body == 5 and buffer.endswith(b"0\r\n\r\n")):
                return len(buffer)
        elif length is not None and body >= length:
            return len(buffer)
        elif length is None and not chunked:
            raise ValueError("a reply with neither content-length nor chunked encoding")


def latency(config: dict, fresh: bool) -> dict:
    template = base64.b64decode(config["request"])
    ports = config["servers"]
    names = list(ports)
    requests = {name: request_bytes(template, port) for name, port in ports.items()}
    open_ = {} if fresh else {name: connect(port) for name, port in ports.items()}
    times: dict[str, list[int]] = {name: [] for name in names}
    for number in range(config["warmup"] + config["count"]):
        order = names if number % 2 == 0 else names[::-1]
        for name in order:
            started = time.perf_counter_ns()
            sock = connect(ports[name]) if fresh else open_[name]
            exchange(sock, requests[name])
            if fresh:
                sock.close()
            took = time.perf_counter_ns() - started
            if number >= config["warmup"]:
                times[name].append(took)
    for sock in open_.values():
        sock.close()
    return times


def throughput(config: dict) -> dict:
    request = request_bytes(base64.b64decode(config["request"]), config["port"])
    deadline_s = config["duration_s"]
    counts = [0] * config["clients"]
    errors: list[str] = []
    start = threading.Barrier(config["clients"] + 1)

    def client(index: int) -> None:
        try:
            sock = connect(config["port"])
            exchange(sock, request)  # the connection's first reply (and the server's peer lookup) not counted
            start.wait()
            end = time.perf_counter() + deadline_s
            while time.perf_counter() < end:
                exchange(sock, request)
                counts[index] += 1
            sock.close()
        except Exception as exc:  # reported, never a silent zero
            errors.append(repr(exc))
            start.abort()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(config["clients"])]
    for thread in threads:
        thread.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - started
    if errors:
        raise RuntimeError("; ".join(errors[:3]))
    return {"replies": sum(counts), "seconds": took}


def main() -> int:
    config = json.loads(sys.stdin.read())
    mode = config["mode"]
    if mode in ("latency", "fresh"):
        answer = latency(config, fresh=mode == "fresh")
    elif mode == "throughput":
        answer = throughput(config)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
