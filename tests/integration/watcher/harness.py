"""A sandbox cluster and a watcher wired to it, for the watcher's integration tests.

Objects are created with the official client (``kubernetes.dynamic``), as a user's tooling
would; the watcher under test gets the sandbox's ApiClient and a private Redis key prefix,
and its metrics go to a registry of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from kubernetes.dynamic import DynamicClient
from prometheus_client import CollectorRegistry

from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.branch_worker.worker import BranchWorker, Stores
from services.watcher.app import Watcher, WatcherParts
from services.watcher.metrics import WatcherMetrics
from shared.kube.clients import ClientFactory
from shared.model.events import LISTED, Listing, ObjectEvent
from shared.model.ids import Branch, BranchKey
from shared.settings import Settings
from shared.store.attribution import AuditRoutes
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from shared.store.ledger import Ledger
from shared.store.receivers import ReceiverDirectory
from shared.store.streams import EventStream, Published
from shared.store.watches import WatchState

GROUP = "gitopsreverser.io/v1alpha1"
#: A clock far from the real one, so nothing can pass by reading real time.
T0 = 1_900_000_000.0


@dataclass
class FakeClock:
    """A settable clock for the watcher (time is injected, never read)."""

    now: float = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Cluster:
    """A sandbox API server with helpers to create and edit objects through the client."""

    server: KubeApiServer
    cache_dir: Path
    dynamic: DynamicClient = field(init=False)

    def __post_init__(self) -> None:
        cache = str(self.cache_dir / f"discovery-{self.server.port}.json")
        self.dynamic = DynamicClient(self.server.api_client(), cache_file=cache)

    def resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        res = self.resource(body["apiVersion"], body["kind"])
        ns = body["metadata"].get("namespace")
        return dict(res.create(body=body, namespace=ns).to_dict())

    def get(self, api_version: str, kind: str, name: str, ns: str | None = None) -> dict[str, Any]:
        return dict(self.resource(api_version, kind).get(name=name, namespace=ns).to_dict())

    def patch(self, api_version: str, kind: str, name: str, ns: str | None, body: Any) -> None:
        self.resource(api_version, kind).patch(
            name=name, namespace=ns, body=body, content_type="application/merge-patch+json"
        )

    def delete(self, api_version: str, kind: str, name: str, ns: str | None = None) -> None:
        self.resource(api_version, kind).delete(name=name, namespace=ns)

    def namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        meta: dict[str, Any] = {"name": name, "labels": labels or {}}
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def configmap(self, ns: str, name: str, data: dict[str, str]) -> dict[str, Any]:
        return self.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns},
                "data": data,
            }
        )

    def conditions(self, kind: str, name: str, ns: str | None = None) -> dict[str, dict[str, Any]]:
        obj = self.get(GROUP, kind, name, ns)
        return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def cluster_provider(name: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "ClusterProvider",
        "metadata": {"name": name},
        "spec": spec,
    }


def git_provider(ns: str, url: str, name: str = "repo", **spec: Any) -> dict[str, Any]:
    body = {"url": url, "allowedBranches": ["main", "env/*"], **spec}
    return {
        "apiVersion": GROUP,
        "kind": "GitProvider",
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def git_target(ns: str, name: str = "target", **spec: Any) -> dict[str, Any]:
    body = {"providerRef": {"name": "repo"}, "branch": "main", "path": f"clusters/{ns}", **spec}
    return {
        "apiVersion": GROUP,
        "kind": "GitTarget",
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def watch_rule(
    ns: str, rules: list[dict[str, Any]], name: str = "rule", target: str = "target"
) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "WatchRule",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"targetRef": {"name": target}, "rules": rules},
    }


CONFIGMAPS = [{"apiGroups": [""], "resources": ["configmaps"]}]


class RecordingStream(EventStream):
    """The real event stream, which also keeps every entry published, in order: the stream
    itself holds only each object's newest event (U1), so a test that checks what the watcher
    published, edit by edit, reads this record."""

    def __init__(self, client: redis.Redis, keys: Keys, log: list[tuple[BranchKey, Any]]) -> None:
        super().__init__(client, keys)
        self._log = log

    def publish(self, bk: BranchKey, event: Published) -> str:
        self._log.append((bk, event))
        return super().publish(bk, event)

    def publish_many(self, bk: BranchKey, events: Sequence[Published]) -> None:
        self._log.extend((bk, event) for event in events)
        super().publish_many(bk, events)


@dataclass
class Rig:
    """Everything a watcher test needs: the cluster, Redis and how to run the watcher."""

    cluster: Cluster
    redis: redis.Redis
    prefix: str
    clock: FakeClock = field(default_factory=FakeClock)
    settings_overrides: dict[str, Any] = field(default_factory=dict)
    last_metrics: WatcherMetrics | None = None
    registry: CollectorRegistry | None = None
    log: list[tuple[BranchKey, Any]] = field(default_factory=list)

    @property
    def keys(self) -> Keys:
        return Keys(self.prefix)

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.redis, self.keys)

    @property
    def config(self) -> ConfigStore:
        return ConfigStore(self.redis, self.keys)

    def watcher(self, burst: bool = True) -> Watcher:
        """A watcher on this rig (``burst``: its ``run_burst`` drains and returns)."""
        settings = Settings(key_prefix=self.prefix, **self.settings_overrides)
        self.registry = CollectorRegistry()
        self.last_metrics = WatcherMetrics(self.registry)
        parts = WatcherParts(
            settings=settings,
            events=RecordingStream(self.redis, self.keys, self.log),
            config=self.config,
            state=WatchState(self.redis, self.keys),
            factory=ClientFactory(settings, self.clock, local=self.cluster.server.api_client()),
            metrics=self.last_metrics,
            ledger=self.ledger,
            clock=self.clock,
            receivers=ReceiverDirectory(self.redis, self.keys),
            commit_requests=self.commit_requests(settings),
            audit_routes=AuditRoutes(self.redis, self.keys),
        )
        return Watcher(parts, burst=burst)

    def commit_requests(self, settings: Settings | None = None) -> CommitRequests:
        ttl = (settings or Settings(**self.settings_overrides)).commit_request_ttl
        return CommitRequests(self.redis, self.keys, ttl.total_seconds())

    def burst(self) -> None:
        """One ``--burst`` run of a fresh watcher (a restart, as far as Redis can tell)."""
        watcher = self.watcher()
        try:
            watcher.run_burst()
        finally:
            watcher.close()

    def events(self, url: str, branch: str = "main") -> list[ObjectEvent]:
        return self.events_of(Branch(url, branch).key)

    def events_of(self, bk: BranchKey) -> list[ObjectEvent]:
        """The object events in the branch's stream (listings left out)."""
        entries = self.redis.xrange(self.keys.branch_events(bk))
        return [ObjectEvent.from_fields(f) for _, f in entries if f.get("op") != LISTED]

    def published(self, url: str, branch: str = "main") -> list[ObjectEvent]:
        """Every object event the watchers of this rig published for the branch, in order."""
        bk = Branch(url, branch).key
        return [e for b, e in self.log if b == bk and isinstance(e, ObjectEvent)]

    def listings(self, url: str, branch: str = "main") -> list[Listing]:
        """The listings (D2) in the branch's stream."""
        entries = self.redis.xrange(self.keys.branch_events(Branch(url, branch).key))
        return [Listing.from_fields(f) for _, f in entries if f.get("op") == LISTED]

    def metric(self, name: str, **labels: str) -> float:
        assert self.registry is not None
        value = self.registry.get_sample_value(name, labels)
        return float(value or 0.0)


@contextmanager
def sandbox_cluster(cache_dir: Path, history: int = 1000) -> Iterator[Cluster]:
    """A started API server double with every CRD the product knows (ours, Flux, Argo CD)."""
    server = KubeApiServer(all_crd_files(), history=history)
    server.start()
    try:
        yield Cluster(server, cache_dir)
    finally:
        server.stop()


def allowing(ns: str, *applier_namespaces: str) -> dict[str, Any]:
    """``spec.crossNamespaceAppliers`` allowing the appliers of ``applier_namespaces`` for
    GitTargets in ``ns`` (T2)."""
    return {
        "crossNamespaceAppliers": [
            {"namespace": a, "accessFrom": {"names": [ns]}} for a in applier_namespaces
        ]
    }


def mirror_setup(
    rig: Rig,
    url: str,
    ns: str = "team-a",
    rules: list[dict[str, Any]] | None = None,
    appliers_from: tuple[str, ...] = (),
    **target_spec: Any,
) -> str:
    """A namespace mirrored to ``url`` (main, ``clusters/<ns>``); returns the GitTarget uid.
    ClusterProvider ``default`` admits ``ns`` and allows it the appliers of
    ``appliers_from``."""
    c = rig.cluster
    c.namespace(ns)
    c.create(cluster_provider(accessFrom={"names": [ns]}, **allowing(ns, *appliers_from)))
    c.create(git_provider(ns, url))
    target = c.create(git_target(ns, **target_spec))
    c.create(watch_rule(ns, rules or CONFIGMAPS))
    return str(target["metadata"]["uid"])


def mirror_everything(rig: Rig, url: str, work: Path) -> None:
    """A branch worker takes the branch and applies every event the watcher published, then
    pushes it when it shuts down (its open window is flushed); each event is acknowledged
    only after that push (M8). Each wake blocks on Redis or on the worker's pool, so the
    bounded loop below waits on the worker, never on a timer. It ends once every event is in
    the branch's open window (read, not yet acknowledged) or handled already: an event that
    writes nothing (an ignored field's change) is acknowledged, so deleted, at once; without
    that end an idle worker's rounds (each blocking up to a second) ran out the test's time."""
    settings = Settings(key_prefix=rig.prefix, work_dir=str(work))
    worker = BranchWorker(settings, Stores.build(rig.redis, settings), "w1", FakeClock())
    bk = Branch(url, "main").key
    stream = rig.keys.branch_events(bk)
    try:
        for _ in range(200):
            worker.wake()
            worker.settle()
            loop = worker.loops.get(bk)
            read = rig.redis.xpending(stream, "owners")["pending"] if loop else -1
            left = rig.redis.xlen(stream)
            if loop is not None and (left == 0 or (loop.busy() and read == left)):
                break
    finally:
        worker.shutdown()
