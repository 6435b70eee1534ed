"""Raw HTTP/1.1 over a real socket: requests http.client refuses to send, and slow clients.

No tests in this module. A slow client is a real TCP connection that sends its request a byte
at a time; its pacing is the read timeout of its own socket (it sends the next byte when the
server has said nothing for ``interval`` seconds), and what the test waits on is an event: the
server answered, or closed the connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@dataclass(frozen=True)
class Reply:
    """An answer read off the wire: status code, headers (lower-case names), raw body."""

    code: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def parse_reply(raw: bytes) -> Reply:
    """The first answer in ``raw`` (it must have a Content-Length, as every answer of ours has)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    code = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", len(rest)))
    return Reply(code, headers, rest[:length])


def exchange(url: str, request: bytes, timeout: float = 10.0) -> Reply:
    """Send ``request`` whole, read until the server closes (or ``timeout``), parse the answer."""
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return parse_reply(b"".join(chunks))


@dataclass
class SlowClient:
    """A connection that sends ``prefix`` at once, then ``drip`` one byte every ``interval``
    seconds for as long as the server keeps it open; ``closed`` is set when the server closes it
    (or resets it), with what the server said in ``received``."""

    url: str
    prefix: bytes
    drip: bytes = b"x" * 1_000_000
    interval: float = 0.5
    closed: threading.Event = field(default_factory=threading.Event)
    dripping: threading.Event = field(default_factory=threading.Event)
    received: bytearray = field(default_factory=bytearray)
    opened_at: float = 0.0
    closed_at: float = 0.0
    sent: int = 0

    def start(self) -> SlowClient:
        self._sock = socket.create_connection(address(self.url), timeout=10)
        self.opened_at = time.monotonic()
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        sock = self._sock
        sock.settimeout(self.interval)
        try:
            if self.prefix:
                sock.sendall(self.prefix)
            while True:
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    if not self.drip or self.sent >= len(self.drip):
                        continue  # an idle client: say nothing, keep listening
                    sock.sendall(self.drip[self.sent : self.sent + 1])
                    self.sent += 1
                    if self.sent >= 2:
                        self.dripping.set()
                    continue
                if not data:
                    break
                self.received.extend(data)
        except OSError:
            pass  # reset by the server: closed too
        finally:
            self.closed_at = time.monotonic()
            self.closed.set()
            sock.close()

    def lasted(self) -> float:
        return self.closed_at - self.opened_at

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
