"""An open-loop HTTP load generator in one thread of its own process, for latency at a rate.

The receiver benchmark's first generator sent each request from one of 32 threads of the
benchmark's own process (``http.client``): on a 2-core machine those threads fight for one
GIL, so a request whose answer had arrived waited for the generator, not the server, and
that wait was in every app's p99. Here one thread drives every connection with a selector,
sends prepared bytes (only the delivery id changes) and reads the answer's head for its
Content-Length: far less work per request on the generator's side, and none of it contended.

It is the same for every app measured (the floors and the receiver), so it favours none: a
request is timed from its scheduled send time (no coordinated omission), and one that finds
no idle connection waits for one, its lateness counted. An answer that says
``Connection: close`` ends its connection and a new one takes its place, as any HTTP client
does; the connecting is the generator's time, in the lateness of the requests it delays, and
the count is reported. With ``fresh``, every request goes on a connection of its own, opened
when the request is due (the connecting is in its latency) and closed by the client after the
answer: a Git host's shape (GitHub opens a connection per delivery).
"""

from __future__ import annotations

import json
import selectors
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Paced:
    """What an open-loop run produced: per request (latency, lateness), and failed statuses."""

    timings: list[tuple[float, float]]
    failures: list[int]
    cpu_s: float  # CPU the generator itself used
    reconnected: int  # answers that said Connection: close, after which it reconnected


@dataclass(frozen=True, slots=True)
class Plan:
    """One open-loop run: where, what, how fast, how many, over how many connections."""

    address: tuple[str, int]
    head: bytes  # the request up to the delivery id header's value
    tail: bytes  # from the end of that value: the rest of the head and the body
    rate: float
    count: int
    connections: int
    fresh: bool = False  # each request on a new connection, closed after its answer


def _reply_length(buffer: bytes) -> int | None:
    """The whole reply's length once its head has arrived (it must carry Content-Length)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    for line in buffer[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return end + 4 + int(value)
    raise ValueError("a reply without Content-Length")


def _connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _closes(reply: bytes) -> bool:
    """Whether the server said it closes the connection after this reply."""
    head = reply[: reply.find(b"\r\n\r\n")].lower()
    return b"\r\nconnection: close" in head


def _put_back(plan: Plan, sock: socket.socket, reply: bytes, idle: list[socket.socket]) -> int:
    """After an answer: the connection back to the idle ones, or closed (``fresh``, or the
    server said it closes, when a new one takes its place); 1 when it was reconnected."""
    if plan.fresh:
        sock.close()
        return 0
    if _closes(reply):
        sock.close()
        idle.append(_connect(plan.address))
        return 1
    idle.append(sock)
    return 0


def run(plan: Plan) -> Paced:
    """Send ``plan.count`` requests at ``plan.rate``/s; every request timed from its due time."""
    cpu_at = time.process_time()
    selector = selectors.DefaultSelector()
    idle: list[socket.socket] = []
    for _ in range(0 if plan.fresh else plan.connections):
        idle.append(_connect(plan.address))
    reconnected = 0
    busy: dict[socket.socket, tuple[float, float, bytearray]] = {}  # due, sent, buffer
    timings: list[tuple[float, float]] = []
    failures: list[int] = []
    start_at = time.perf_counter() + 0.2
    sent = 0
    try:
        while len(timings) + len(failures) < plan.count:
            now = time.perf_counter()
            while sent < plan.count and (plan.fresh or idle) and start_at + sent / plan.rate <= now:
                sock = _connect(plan.address) if plan.fresh else idle.pop()
                delivery = str(uuid.uuid4()).encode()
                sock.sendall(plan.head + delivery + plan.tail)
                busy[sock] = (start_at + sent / plan.rate, time.perf_counter(), bytearray())
                selector.register(sock, selectors.EVENT_READ)
                sent += 1
            due_next = start_at + sent / plan.rate
            ready = plan.fresh or idle
            wait = max(0.0, due_next - time.perf_counter()) if ready and sent < plan.count else 1.0
            for key, _ in selector.select(wait):
                sock = key.fileobj  # type: ignore[assignment]
                chunk = sock.recv(65536)
                due, at, buffer = busy[sock]
                if not chunk:
                    raise ConnectionError("the server closed a connection mid-run")
                buffer += chunk
                length = _reply_length(bytes(buffer))
                if length is None or len(buffer) < length:
                    continue
                done = time.perf_counter()
                selector.unregister(sock)
                del busy[sock]
                reconnected += _put_back(plan, sock, bytes(buffer), idle)
                status = int(buffer[9:12])
                if status == 202:
                    timings.append((done - due, at - due))
                else:
                    failures.append(status)
    finally:
        for sock in [*idle, *busy]:
            sock.close()
        selector.close()
    return Paced(timings, failures, time.process_time() - cpu_at, reconnected)


def run_apart(plan: Plan) -> Paced:
    """``run`` in a process of its own: a fresh interpreter that imports only this module
    (the standard library), so no thread of the benchmark shares its GIL."""
    document = {
        "address": list(plan.address),
        "head": plan.head.decode("latin-1"),
        "tail": plan.tail.decode("latin-1"),
        "rate": plan.rate,
        "count": plan.count,
        "connections": plan.connections,
        "fresh": plan.fresh,
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.openloop"],
        input=json.dumps(document),
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result = json.loads(done.stdout)
    timings = [(float(a), float(b)) for a, b in result["timings"]]
    failures = [int(f) for f in result["failures"]]
    return Paced(timings, failures, float(result["cpu_s"]), int(result["reconnected"]))


def main() -> None:
    """``python -m bench.openloop``: a Plan as JSON on stdin, the Paced as JSON on stdout."""
    document = json.load(sys.stdin)
    host, port = document["address"]
    plan = Plan(
        (str(host), int(port)),
        str(document["head"]).encode("latin-1"),
        str(document["tail"]).encode("latin-1"),
        float(document["rate"]),
        int(document["count"]),
        int(document["connections"]),
        bool(document.get("fresh", False)),
    )
    paced = run(plan)
    json.dump(
        {
            "timings": paced.timings,
            "failures": paced.failures,
            "cpu_s": paced.cpu_s,
            "reconnected": paced.reconnected,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()


def prepared(
    path: str, body: bytes, headers: dict[str, str], id_header: str
) -> tuple[bytes, bytes]:
    """(head, tail) of a keep-alive POST whose ``id_header`` value goes between them."""
    lines = [f"POST {path} HTTP/1.1", "Host: bench", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + f"\r\n{id_header}: ").encode("latin-1")
    return head, b"\r\n\r\n" + body
