"""One frozen Settings object, built once from ``GITOPS_REVERSER_*`` environment variables.

Every process reads its configuration here and nowhere else (no ``os.environ`` outside this
module), and an invalid value stops the process at start-up with a message that names the
variable, instead of failing later in the middle of a window or a push.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from shared.model.duration import DurationError, parse_duration
from shared.model.redis_url import UrlError, check_url

PREFIX = "GITOPS_REVERSER_"
T = TypeVar("T")

#: Flux's notification-controller caps a webhook body at 3 MiB; we follow the same default.
DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024


class SettingsError(ValueError):
    """A ``GITOPS_REVERSER_*`` variable holds a value the process cannot run with."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every process may be configured with. Each field's doc says why it has its default."""

    #: Where all state lives; the Debian package's default port. ``redis+sentinel://`` (or
    #: ``rediss+sentinel://``) ``[:password@]host1:port1,host2:port2/<service>/<db>`` follows
    #: a Sentinel set's primary across failovers (``shared.model.redis_url``).
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: How many replicas a write the product acknowledges (the watcher's publish of an edit,
    #: the receiver's 202, the branch worker's ack after a push, the dispatcher's report)
    #: waits for (``WAIT``, at most a second) before it counts as done (``shared.store.durable``).
    #: 0 waits for none; 1 is the advice with Sentinel, so a failover drops no acknowledged write.
    redis_min_replicas: int = 0
    #: Prefix of every Redis key; versioned so a layout change never reads old keys.
    key_prefix: str = "gr:v1"
    #: ``DEBUG``, ``INFO``, ``WARNING`` or ``ERROR``.
    log_level: str = "INFO"
    #: A kubeconfig to use instead of the in-cluster service account (empty = in-cluster).
    kubeconfig: str = ""
    #: The namespace the product runs in: ClusterProvider kubeconfig Secrets are read here.
    #: The chart installs into ``gitops-reverser``, so that is the default.
    namespace: str = "gitops-reverser"
    #: How often the watcher lists GitProviders, GitTargets, WatchRules and ClusterProviders
    #: again; a change to them is picked up within this time.
    reconcile_period: timedelta = timedelta(seconds=10)
    #: Most watches of one namespace each (a thread and a watch connection apiece) the watcher
    #: runs at once. The watcher watches each resource type once, cluster-wide, for every
    #: namespace (issue 29); only a type whose cluster-wide list or watch is forbidden (a
    #: ClusterProvider whose credentials reach some namespaces only) falls back to a watch per
    #: namespace. Past this many, the others wait, with a warning, until one ends: a bound on
    #: the threads a thousand namespaces would otherwise each take.
    namespace_watches: int = 100
    #: How often an idle branch reads its remote tip when no webhook arrives (Q7).
    steady_tick: timedelta = timedelta(seconds=60)
    #: How long an idle branch trusts its view of the remote after a receiver last took a
    #: verified delivery for its repository (P14): meanwhile the steady tick reads no tip, since a
    #: push would come as a notice; 10 minutes, as upstream's guidance bounds a view's age.
    #: Past it, or without a receiver, the steady tick reads (Q7). ``0s`` always reads.
    remote_trust_max_age: timedelta = timedelta(minutes=10)
    #: How long a branch lease lasts without renewal; a dead owner's branches move after it (Q1).
    lease_period: timedelta = timedelta(seconds=15)
    #: Largest webhook body the receiver reads (R3), also for chunked bodies.
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: How long a Secret read by the receiver is cached (R5).
    secret_cache: timedelta = timedelta(seconds=10)
    #: How long the receiver keeps a receiver record (or "no receiver at this path") it read
    #: from Redis: a new or removed GitProvider receiver takes effect within this time, and a
    #: delivery costs one Redis round trip instead of two. ``0s`` reads Redis every time.
    receiver_cache: timedelta = timedelta(seconds=5)
    #: gunicorn workers and threads for the receiver. A thread is held while a request's
    #: headers and body arrive, so the threads are what slow clients use up (C5): 16 a worker
    #: keep ten slow connections on one worker from delaying a delivery; each costs a little
    #: memory and no CPU while it waits.
    receiver_workers: int = 2
    receiver_threads: int = 16
    #: Open connections a receiver worker keeps (gunicorn's ``worker_connections``). At the
    #: limit the oldest connection that has sent nothing is closed to make room, so silent
    #: connections never stop a delivery from being accepted; each costs a file descriptor and
    #: about a kilobyte while it waits.
    receiver_connections: int = 1000
    #: Longest a request's headers and body may take to arrive, from its first byte: a slower
    #: client is answered 408 and cut (C5). Git hosts send a delivery in one go and give up on
    #: it after 10 s (GitHub), so nothing legitimate is slower.
    receiver_read_timeout: timedelta = timedelta(seconds=10)
    #: Where gunicorn listens for webhooks: every interface, on the unprivileged port the
    #: chart's Service targets.
    receiver_bind: str = "0.0.0.0:8080"
    #: Port of the ``/metrics`` and health endpoint of the non-HTTP processes (0 = off).
    metrics_port: int = 0
    #: rq queue that carries apply attempts (D1).
    apply_queue: str = "apply-attempts"
    #: How long a finished apply attempt's rq job and its result stay in Redis, for
    #: rq-dashboard (about 6 KB each); ``0s`` drops them when the job ends. A finished job
    #: never runs again, so this does not touch the token's outcome guard.
    job_result_ttl: timedelta = timedelta(minutes=10)
    #: How long a failed apply attempt's rq job stays, so rq-dashboard can show and requeue
    #: it. Each token's outcome guard (D1: one outcome per token) lives this long plus the
    #: job timeout, so a requeued job never reports twice: lowering it is what bounds the
    #: guards' memory (about 0.1 KB a token; docs/architecture.md "What grows with apply
    #: requests").
    job_failure_ttl: timedelta = timedelta(hours=24)
    #: Where a branch worker keeps its clones (one folder per branch; disposable).
    work_dir: str = "/tmp/gitops-reverser"
    #: Longest a commit window stays open while writes keep coming (M6).
    max_window: timedelta = timedelta(seconds=60)
    #: Longest an object event waits for its audit fact before its commit is authored by the
    #: unresolved sentinel (attribution on; facts: upstream-gitops-reverser.md §3.7, 3 s).
    attribution_grace: timedelta = timedelta(seconds=3)
    #: Longest one ApplierConfigured check may take (S2); a check that overruns reports
    #: Unknown/CheckTimedOut instead of holding up the reconcile pass.
    applier_check_deadline: timedelta = timedelta(seconds=10)
    #: Shortest GitRepository ``spec.interval`` that counts as "does not fetch on its own"
    #: (S2): the product wakes the source when it wants, so the interval is only a backstop.
    min_source_interval: timedelta = timedelta(hours=1)
    #: How often the watcher re-reads the ledger to publish ``status.applier`` (O6): one
    #: Redis round trip per pass, so a request shows in status within seconds.
    applier_status_period: timedelta = timedelta(seconds=2)
    #: How long an apply request may stay out before the branch worker hands it back as
    #: Failed (A4: a dispatcher that died never reports). The dispatcher waits up to 5 minutes
    #: for Flux (D6), so the default is 330s: that wait plus slack.
    attempt_deadline: timedelta = timedelta(seconds=330)
    #: Threads that work a branch worker's branches, each branch on one thread at a time (Q1).
    #: A push to a hosted Git service takes 0.5-2 s and waits on the network, not the CPU, so
    #: eight threads keep eight slow remotes busy at once for little CPU; more only help a
    #: worker whose branches are busy at the same moment.
    branch_threads: int = 8
    #: Most branches one branch worker owns, even when its fair share is larger (Q1): the
    #: rest are left to its siblings. With eight threads and a 0.5-2 s push, 100 branches all
    #: busy at once are each pushed again within about 6-25 s, well inside a commit window's
    #: 60 s maximum; a deployment with more branches runs more workers.
    max_branches: int = 100
    #: The Secret, in ``namespace``, whose key ``key`` keys the fingerprints of sealed Secrets
    #: (P3; services/watcher/encryption.py). Missing: each watcher uses a random key of its
    #: own, and a restart re-encrypts each Secret once at its next event.
    sops_fingerprint_secret: str = "gitops-reverser-sops-fingerprint"
    #: How long a finished CommitRequest stays before the watcher deletes it (P6): an hour
    #: is long enough for whoever made it (a CI job, a person with kubectl) to read its
    #: ``status.sha``, short enough that "save now" objects do not pile up. ``0s`` deletes
    #: one at the first pass after it finished.
    commit_request_ttl: timedelta = timedelta(hours=1)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build Settings from ``environ`` (default: the process environment)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            name = PREFIX + field.name.upper()
            if name in env:
                values[field.name] = _convert(name, env[name], _PARSERS[field.name])
        unknown = sorted(k for k in env if k.startswith(PREFIX) and k not in _KNOWN)
        if unknown:
            raise SettingsError(f"unknown setting(s): {', '.join(unknown)}")
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Refuse combinations no process can run with."""
        if self.log_level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise SettingsError(f"{PREFIX}LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR")
        try:
            check_url(self.redis_url)
        except UrlError as err:
            raise SettingsError(f"{PREFIX}REDIS_URL: {err}") from err
        positive = (
            "max_body_bytes",
            "receiver_workers",
            "receiver_threads",
            "receiver_connections",
            "branch_threads",
            "max_branches",
            "namespace_watches",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise SettingsError(f"{PREFIX}{name.upper()} must be positive")
        if not self.namespace:
            raise SettingsError(f"{PREFIX}NAMESPACE must not be empty")
        if not _is_bind(self.receiver_bind):
            raise SettingsError(f"{PREFIX}RECEIVER_BIND must be HOST:PORT")
        durations = (
            self.steady_tick,
            self.lease_period,
            self.reconcile_period,
            self.applier_check_deadline,
            self.applier_status_period,
            self.attempt_deadline,
            self.receiver_read_timeout,
        )
        if any(value <= timedelta(0) for value in durations):
            raise SettingsError("durations must be positive")
        if self.remote_trust_max_age < timedelta(0):
            raise SettingsError(f"{PREFIX}REMOTE_TRUST_MAX_AGE must not be negative")
        if self.commit_request_ttl < timedelta(0):
            raise SettingsError(f"{PREFIX}COMMIT_REQUEST_TTL must not be negative")


def prometheus_multiproc_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The Prometheus multiprocess directory, when the start-up shell set one.

    prometheus_client reads ``PROMETHEUS_MULTIPROC_DIR`` itself (facts: webhooks-git-libs.md
    §3.5: it must be set in the shell that starts the process), so it is not a
    ``GITOPS_REVERSER_*`` setting; gunicorn's config reads it here to wipe it at start.
    """
    env = os.environ if environ is None else environ
    value = env.get("PROMETHEUS_MULTIPROC_DIR", "")
    return Path(value) if value else None


def _is_bind(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit() and 0 <= int(port) <= 65535


def _positive_or_zero_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except DurationError as err:
        raise ValueError(str(err)) from err


def _convert(name: str, raw: str, parser: Callable[[str], T]) -> T:
    try:
        return parser(raw)
    except ValueError as err:
        raise SettingsError(f"{name}={raw!r}: {err}") from err


_PARSERS: dict[str, Callable[[str], Any]] = {
    "redis_url": str,
    "redis_min_replicas": _positive_or_zero_int,
    "key_prefix": str,
    "log_level": str.upper,
    "kubeconfig": str,
    "namespace": str,
    "sops_fingerprint_secret": str,
    "reconcile_period": _duration,
    "steady_tick": _duration,
    "remote_trust_max_age": _duration,
    "lease_period": _duration,
    "max_body_bytes": _positive_or_zero_int,
    "secret_cache": _duration,
    "receiver_cache": _duration,
    "receiver_workers": _positive_or_zero_int,
    "receiver_threads": _positive_or_zero_int,
    "receiver_connections": _positive_or_zero_int,
    "receiver_read_timeout": _duration,
    "receiver_bind": str,
    "metrics_port": _positive_or_zero_int,
    "apply_queue": str,
    "work_dir": str,
    "max_window": _duration,
    "attribution_grace": _duration,
    "job_result_ttl": _duration,
    "job_failure_ttl": _duration,
    "applier_check_deadline": _duration,
    "min_source_interval": _duration,
    "applier_status_period": _duration,
    "attempt_deadline": _duration,
    "branch_threads": _positive_or_zero_int,
    "max_branches": _positive_or_zero_int,
    "namespace_watches": _positive_or_zero_int,
    "commit_request_ttl": _duration,
}
#: Variables of the test tooling that share the prefix but configure no process.
_TOOLING = frozenset({PREFIX + "SHARED_DIR"})
_KNOWN = frozenset(PREFIX + name.upper() for name in _PARSERS) | _TOOLING
