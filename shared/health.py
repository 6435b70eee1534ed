"""``/healthz``, ``/readyz`` and ``/metrics`` of a process that has no HTTP server of its own.

The watcher, the branch worker and the dispatcher serve these on
``GITOPS_REVERSER_METRICS_PORT`` (the receiver answers the same paths from its Flask app), so
the chart's probes and Prometheus use one port:

- ``/healthz``: the process is alive (its HTTP thread answers); nothing else is asked, so a
  Redis or cluster outage never gets a pod restarted, only taken out of readiness;
- ``/readyz``: every check of the process passed (Redis answers a PING; where the process
  needs it, the Kubernetes API answers ``/version``; for a branch worker, its leases were
  renewed lately): 200, else 503 with the failing checks named;
- anything else: the Prometheus exposition of the process's registry, as before.

Readiness is cheap and time-bounded: each check's probe runs on a thread of its own and the
answer waits at most ``deadline_s`` for all of them; a probe still running then counts as
failed, and is not started again until it returns, so a hung dependency never piles up
threads. A probe returns None when its dependency is fine, or the reason it is not.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shared.metrics import CONTENT_TYPE, own_exposition

log = logging.getLogger(__name__)

#: A probe: None when its dependency is fine, else the reason it is not.
Probe = Callable[[], str | None]
#: What a WSGI application is (PEP 3333), as far as this module uses it.
Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: Longest ``/readyz`` waits for its checks. Kubernetes' default probe timeout is 1 s; the
#: chart sets 3 s, so 2 s leaves room for the answer itself.
READY_DEADLINE_S = 2.0


#: The readiness checks' series: 1 when the check passed at this scrape, else 0 (issue 26:
#: "Redis unreachable" is ``{check="redis"} == 0``).
READY_CHECK = "gitops_reverser_readiness_check_ok"
READY_CHECK_HELP = (
    "1 when the process's readiness check (redis, kubernetes, leases) passed when scraped, else 0"
)


class ReadyChecks(Collector):
    """The process's readiness checks, run at each scrape (bounded by their own deadline)."""

    def __init__(self, checks: Callable[[], Mapping[str, bool]]) -> None:
        self._checks = checks

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(READY_CHECK, READY_CHECK_HELP, labels=["check"])
        for name, ok in sorted(self._checks().items()):
            family.add_metric([name], 1.0 if ok else 0.0)
        yield family


@dataclass(frozen=True, slots=True)
class Check:
    """One readiness check: a name (``redis``, ``kubernetes``, ``leases``) and its probe."""

    name: str
    probe: Probe


@dataclass(frozen=True, slots=True)
class Readiness:
    """What ``/readyz`` answers: ready or not, and each check's result (``ok`` or a reason)."""

    ready: bool
    results: dict[str, str]

    def reason(self) -> str:
        """One line naming each check and its result."""
        return "; ".join(f"{name}: {result}" for name, result in self.results.items())


class _Run:
    """One probe running on its own thread; its outcome once it returns."""

    def __init__(self, probe: Probe) -> None:
        self.done = threading.Event()
        self.outcome: str | None = None
        self._probe = probe
        threading.Thread(target=self._run, name="readiness", daemon=True).start()

    def _run(self) -> None:
        try:
            self.outcome = self._probe()
        except Exception as err:  # a probe that fails unexpectedly is a failed check
            self.outcome = f"{type(err).__name__}: {err}"
        finally:
            self.done.set()


class Health:
    """The readiness checks of a process, run together under one deadline."""

    def __init__(
        self,
        checks: Iterable[Check],
        deadline_s: float = READY_DEADLINE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._checks = tuple(checks)
        self._deadline_s = deadline_s
        self._clock = clock
        self._lock = threading.Lock()
        self._running: dict[str, _Run] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The checks' names, in order."""
        return tuple(check.name for check in self._checks)

    def _start(self) -> dict[str, _Run]:
        with self._lock:
            for check in self._checks:
                previous = self._running.get(check.name)
                if previous is None or previous.done.is_set():
                    self._running[check.name] = _Run(check.probe)
            return dict(self._running)

    def readiness(self) -> Readiness:
        """Run every check (bounded by the deadline) and say whether the process is ready."""
        runs = self._start()
        end = self._clock() + self._deadline_s
        results: dict[str, str] = {}
        for check in self._checks:
            run = runs[check.name]
            if not run.done.wait(max(0.0, end - self._clock())):
                results[check.name] = f"no answer within {self._deadline_s:g}s"
            else:
                results[check.name] = run.outcome or "ok"
        return Readiness(all(result == "ok" for result in results.values()), results)


def _metrics_app(checks: CollectorRegistry) -> Wsgi:
    def serve(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        data = own_exposition(checks)
        start("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(data)))])
        return [data]

    return serve


def _json(start: Callable[..., Any], code: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    start(code, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def app(health: Health, metrics: Wsgi | None = None) -> Wsgi:
    """The WSGI application: the two health paths, and the metrics for every other path
    (the process's own, ``shared.metrics.LIVE``, and the readiness checks run at the scrape:
    ``gitops_reverser_readiness_check_ok``)."""
    checks = CollectorRegistry(auto_describe=False)
    checks.register(
        ReadyChecks(lambda: {k: v == "ok" for k, v in health.readiness().results.items()})
    )
    exposition: Wsgi = metrics or _metrics_app(checks)

    def serve(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            return _json(start, "200 OK", {"status": "ok", "reason": "alive"})
        if path == "/readyz":
            found = health.readiness()
            if found.ready:
                return _json(start, "200 OK", {"status": "ok", "reason": found.reason()})
            log.warning("not ready: %s", found.reason())
            body = {"status": "unavailable", "reason": found.reason()}
            return _json(start, "503 Service Unavailable", body)
        return exposition(environ, start)

    return serve


class _Server(ThreadingMixIn, WSGIServer):
    """One thread per request, none of which keeps the process alive at exit."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: probes every few seconds would drown the JSON log."""

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass(slots=True)
class Server:
    """The running health and metrics server; ``port`` is the one bound (0 picks a free one)."""

    port: int
    _server: _Server

    def close(self) -> None:
        """Stop answering and release the port."""
        self._server.shutdown()
        self._server.server_close()


#: Every interface: the kubelet probes the pod's IP, and Prometheus scrapes it.
ALL_INTERFACES = "0.0.0.0"


def serve(port: int, health: Health, host: str = ALL_INTERFACES) -> Server:
    """Serve ``app(health)`` on ``port`` from a daemon thread."""
    server = make_server(host, port, app(health), _Server, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="health", daemon=True)
    thread.start()
    return Server(int(server.server_port), server)
