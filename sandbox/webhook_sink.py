"""A receiver for the webhook applier: records each POST and verifies its signature.

It stands for the CI job or in-house deployer a ``spec.applier.webhook`` names, and it knows
nothing of the product: it checks a request only by the contract ``docs/crds.md`` publishes
("The webhook applier": ``X-GitOps-Reverser-Signature`` is ``sha256=`` and the hex
HMAC-SHA256 of ``<X-GitOps-Reverser-Timestamp>.<raw body>``). It answers ``status`` (200 by
default) after ``delay_s`` (0 by default), so a test can make it fail or hang; ``stop`` releases
a held answer at once. Tests await deliveries with ``wait_for``, never by sleeping.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIGNATURE = "X-GitOps-Reverser-Signature"
TIMESTAMP = "X-GitOps-Reverser-Timestamp"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One POST as received."""

    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool  # the signature matches the key the sink was given

    def json(self) -> Any:
        """The body, decoded."""
        return json.loads(self.body)


class WebhookSink:
    """An HTTP endpoint on 127.0.0.1 that records and verifies what it receives."""

    def __init__(self, key: bytes, status: int = 200, delay_s: float = 0.0) -> None:
        self.key = key
        self.status = status
        self.delay_s = delay_s
        self._deliveries: list[Delivery] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL; any path under it is accepted."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> WebhookSink:
        """Serve in a thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release held answers and stop serving."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def deliveries(self) -> list[Delivery]:
        """Every POST so far, in order."""
        with self._changed:
            return list(self._deliveries)

    def wait_for(self, count: int, timeout_s: float) -> list[Delivery]:
        """The first ``count`` deliveries, once they have arrived (AssertionError after
        ``timeout_s`` without them)."""
        with self._changed:
            arrived = self._changed.wait_for(lambda: len(self._deliveries) >= count, timeout_s)
            assert arrived, f"{len(self._deliveries)} of {count} deliveries in {timeout_s}s"
            return list(self._deliveries[:count])

    def verify(self, headers: dict[str, str], body: bytes) -> bool:
        """The documented check: HMAC-SHA256 of ``<timestamp>.<body>`` with the key."""
        timestamp = headers.get(TIMESTAMP, "")
        signed = timestamp.encode() + b"." + body
        expected = "sha256=" + hmac.new(self.key, signed, hashlib.sha256).hexdigest()
        return bool(timestamp) and hmac.compare_digest(expected, headers.get(SIGNATURE, ""))

    def _record(self, delivery: Delivery) -> None:
        with self._changed:
            self._deliveries.append(delivery)
            self._changed.notify_all()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k: v for k, v in self.headers.items()}
                sink._record(Delivery(self.path, headers, body, sink.verify(headers, body)))
                if sink.delay_s:
                    sink._stopping.wait(sink.delay_s)
                self.send_response(sink.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
