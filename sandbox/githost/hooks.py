"""Configured webhooks, the record of every delivery, and the thread that sends them.

Real hosts never let a slow or dead receiver hold up a push: they queue the delivery and send
it in the background with a timeout (GitHub fails a delivery after 10 s, facts §1.1), and
they keep a log of what went out, which a user can "redeliver" with the same id and body.
This module is that queue and log, plus the faults later tests inject: drop a delivery
(recorded, never sent), delay it (later deliveries overtake it), or send it twice (a replay).
"""

from __future__ import annotations

import heapq
import http.client
import itertools
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

LOG = logging.getLogger(__name__)
Provider = Literal["github", "gitea", "forgejo", "gitlab"]
SEND_TIMEOUT_SECONDS = 10.0  # GitHub records a delivery as failed after 10 s (facts §1.1)
EVENTS: dict[str, frozenset[str]] = {
    "github": frozenset({"push", "create", "delete"}),
    "gitea": frozenset({"push", "create", "delete"}),
    "forgejo": frozenset({"push", "create", "delete"}),
    "gitlab": frozenset({"push", "tag_push"}),
}


@dataclass(frozen=True)
class Hook:
    """One webhook of a repository: where it posts, in which provider's dialect, for what."""

    url: str
    provider: Provider
    content_type: Literal["json", "form"] = "json"  # gitlab: json only
    secret: str = ""
    events: tuple[str, ...] = ("push",)  # gitea may add "create", "delete"

    def __post_init__(self) -> None:
        if self.provider not in EVENTS:
            raise ValueError(f"unknown provider {self.provider!r}")
        if self.content_type not in ("json", "form"):
            raise ValueError(f"unknown content type {self.content_type!r}")
        if self.provider == "gitlab" and self.content_type != "json":
            raise ValueError("GitLab webhooks are always JSON")
        unknown = set(self.events) - EVENTS[self.provider]
        if unknown:
            raise ValueError(f"{self.provider} sends no {sorted(unknown)} events")


@dataclass(frozen=True)
class Delivery:
    """One attempt to send one webhook request, as the host's delivery log shows it."""

    id: str
    hook: Hook
    event: str
    headers: dict[str, str]
    body: bytes
    status: int | None
    error: str | None
    attempt: int
    sent_at: float


@dataclass(frozen=True, slots=True)
class Fault:
    """What to do to a repository's next delivery instead of sending it once, now."""

    kind: Literal["drop", "delay", "repeat"]
    amount: float = 0.0  # seconds for "delay", total sends for "repeat"


@dataclass(frozen=True, slots=True)
class Request:
    """A delivery ready to go: its repository, id, hook, event, headers and body.

    ``key`` tells apart the requests of one event to several hooks: GitHub gives them all the
    same delivery id (the ``guid`` "shared with all deliveries for all webhooks that subscribe
    to this event", github/docs#32822).
    """

    key: str
    repo: str
    id: str
    hook: Hook
    event: str
    headers: dict[str, str]
    body: bytes


class Sender:
    """A background thread that posts queued requests and records every outcome."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: list[tuple[float, int, Request, int]] = []  # (due, seq, request, sends)
        self._seq = itertools.count()
        self._log: list[tuple[str, Delivery]] = []
        self._attempts: dict[str, int] = {}
        self._requests: dict[str, Request] = {}
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="githost-sender", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; deliveries still queued are abandoned."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=SEND_TIMEOUT_SECONDS + 5)
            self._thread = None

    def submit(self, request: Request, fault: Fault | None) -> None:
        """Queue ``request`` (or record it as dropped) according to ``fault``."""
        with self._cond:
            self._requests[request.key] = request
            if fault is not None and fault.kind == "drop":
                self._record(request, None, "dropped", self._next_attempt(request.key))
                return
            delay = fault.amount if fault is not None and fault.kind == "delay" else 0.0
            sends = int(fault.amount) if fault is not None and fault.kind == "repeat" else 1
            due = time.monotonic() + delay
            heapq.heappush(self._queue, (due, next(self._seq), request, sends))
            self._cond.notify_all()

    def redeliver(self, delivery_id: str, hook: Hook | None = None) -> Delivery:
        """Send a recorded delivery again, now, with the same id, headers and body.

        When several hooks got that id (GitHub), ``hook`` says which one to send it to.
        """
        with self._cond:
            found = [
                r
                for r in self._requests.values()
                if r.id == delivery_id and (hook is None or r.hook == hook)
            ]
        if not found:
            raise KeyError(f"no delivery {delivery_id!r}")
        if len(found) > 1 and hook is None:
            raise ValueError(f"{len(found)} hooks got delivery {delivery_id!r}; name the hook")
        return self._post(found[0])

    def deliveries(self, repo: str | None) -> list[Delivery]:
        with self._cond:
            return [d for r, d in self._log if repo is None or r == repo]

    def wait_for(self, count: int, timeout: float, repo: str | None) -> list[Delivery]:
        """Block until ``count`` deliveries (of ``repo``) are recorded; TimeoutError if not."""
        with self._cond:
            done = self._cond.wait_for(lambda: len(self._matching(repo)) >= count, timeout=timeout)
            found = self._matching(repo)
        if not done:
            raise TimeoutError(f"{len(found)} of {count} deliveries after {timeout}s")
        return found

    def _matching(self, repo: str | None) -> list[Delivery]:
        return [d for r, d in self._log if repo is None or r == repo]

    def _run(self) -> None:
        while True:
            taken = self._take()
            if taken is None:
                return
            request, sends = taken
            for _ in range(max(sends, 1)):
                try:
                    self._post(request)
                except Exception:  # the outermost loop: one bad delivery must not stop the rest
                    LOG.exception("delivery %s failed unexpectedly", request.id)

    def _take(self) -> tuple[Request, int] | None:
        """The next request whose time has come, or None once stopping."""
        with self._cond:
            while not self._stopping:
                if not self._queue:
                    self._cond.wait()
                    continue
                wait = self._queue[0][0] - time.monotonic()
                if wait <= 0:
                    _, _, request, sends = heapq.heappop(self._queue)
                    return request, sends
                self._cond.wait(wait)
            return None

    def _post(self, request: Request) -> Delivery:
        with self._cond:
            attempt = self._next_attempt(request.key)
        http_request = urllib.request.Request(
            request.hook.url, data=request.body, headers=request.headers, method="POST"
        )
        status: int | None = None
        error: str | None = None
        try:
            with self._opener.open(http_request, timeout=SEND_TIMEOUT_SECONDS) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        with self._cond:
            return self._record(request, status, error, attempt)

    def _next_attempt(self, key: str) -> int:
        self._attempts[key] = self._attempts.get(key, 0) + 1
        return self._attempts[key]

    def _record(
        self, request: Request, status: int | None, error: str | None, attempt: int
    ) -> Delivery:
        delivery = Delivery(
            id=request.id,
            hook=request.hook,
            event=request.event,
            headers=dict(request.headers),
            body=request.body,
            status=status,
            error=error,
            attempt=attempt,
            sent_at=self._clock(),
        )
        self._log.append((request.repo, delivery))
        self._cond.notify_all()
        return delivery
