"""One reconcile pass: read our custom resources, report their status, decide the watches.

The pass lists ClusterProviders, GitProviders, GitTargets, WatchRules and Namespaces from the
cluster we run in, then in order: reaches each ClusterProvider's cluster (its discovery is
what rules resolve against), probes each GitProvider, validates each GitTarget and publishes
the served ones' config (checking each one's applier, S2), publishes ``status.applier``
from the ledger (S3), reports each WatchRule, and computes the watches the served
GitTargets' rules ask for; performing them is the caller's job (``services.watcher.app``).
Between passes, ``publish_applier_status`` publishes ledger changes on their own (O6).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from services.watcher.applier_status import ApplierStatus
from services.watcher.appliers import ApplierChecker
from services.watcher.clusters import audit_routes, read_tokens, reconcile_clusters
from services.watcher.encryption import Sealer, ensure_master, with_recipients
from services.watcher.metrics import WatcherMetrics
from services.watcher.placement_status import publish_placement
from services.watcher.probe import Prober
from services.watcher.providers import reconcile_providers
from services.watcher.receivers import publish_receivers
from services.watcher.remote_status import RemoteStatus
from services.watcher.resync import ReconcileRequests
from services.watcher.rules import reconcile_cluster_rules, reconcile_rules
from services.watcher.signing import SigningKeys
from services.watcher.status import StatusPublisher
from services.watcher.suspension import sync_suspensions
from services.watcher.targets import TargetReconciler, World, verdict_of
from shared.decide.cluster_rules import Sources, desired_cluster_watches
from shared.decide.conditions import Problem
from shared.decide.selectors import selection_key
from shared.decide.watches import ServedTarget, WatchKey, WatchSpec, desired_watches
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.status import StatusWriter
from shared.model.crds import (
    ClusterProviderView,
    ClusterWatchRuleView,
    GitProviderView,
    GitTargetView,
    WatchRuleView,
)
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.times import rfc3339
from shared.settings import Settings
from shared.store.attribution import AuditRoutes
from shared.store.branch_health import Stall
from shared.store.config import ConfigStore
from shared.store.ledger import Ledger
from shared.store.receivers import ReceiverDirectory
from shared.store.watches import WatchFeed, WatchState

logger = logging.getLogger(__name__)

#: The component name our Events and status writes carry.
COMPONENT = "gitops-reverser-watcher"


def branch_problems(stalls: Mapping[BranchKey, Stall]) -> dict[BranchKey, Problem]:
    """Each stalled branch as its GitTargets show it: the reason, since when, the error (T4)."""
    return {
        bk: Problem(s.reason, f"since {rfc3339(s.since)}: {s.message}", permanent=False)
        for bk, s in stalls.items()
    }


@dataclass(frozen=True, slots=True)
class AppliersSetup:
    """What the applier checks and ``status.applier`` need: their settings and the ledger."""

    settings: Settings
    ledger: Ledger


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Our custom resources and the namespaces' labels, as one pass read them."""

    clusters: list[ClusterProviderView]
    providers: list[GitProviderView]
    targets: list[GitTargetView]
    rules: list[WatchRuleView]
    namespace_labels: dict[str, dict[str, str]]
    cluster_rules: list[ClusterWatchRuleView] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a pass decided: the watches to run and the client of each cluster they use."""

    desired: dict[WatchKey, WatchSpec]
    clients: dict[str, KubeClient]
    target_uids: frozenset[str]


class Reconciler:
    """Reconcile passes over the cluster we run in."""

    def __init__(
        self,
        factory: ClientFactory,
        config: ConfigStore,
        state: WatchState,
        metrics: WatcherMetrics,
        clock: Callable[[], float],
        *,
        appliers: AppliersSetup,
        receivers: ReceiverDirectory | None = None,
        audit_routes: AuditRoutes | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        local = factory.local()
        self._local = local.client
        self._receivers = receivers
        self._audit_routes = audit_routes
        self._factory = factory
        self._reader = CrdReader(local.client)
        self._settings = appliers.settings
        self._sealer = sealer
        writer = StatusWriter(local.client, COMPONENT, clock)
        self._status = StatusPublisher(writer, metrics, clock)
        self._metrics = metrics
        self._prober = Prober(clock)
        self._checker = ApplierChecker.for_settings(
            appliers.settings.applier_check_deadline.total_seconds(),
            appliers.settings.min_source_interval.total_seconds(),
        )
        self._targets = TargetReconciler(config, state, self._status, self._checker, clock)
        self._health = config.branch_health()
        self._state = state
        #: The watches each GitTarget was last published with (``_publish_feeds``).
        self._feeds: dict[GitTargetUid, set[WatchFeed]] = {}
        #: The marker of Redis's data as the last pass read it (C8); None before the first.
        self._epoch: str | None = None
        self._applier_status = ApplierStatus(writer, appliers.ledger)
        self._suspensions = config.suspensions()
        self._resyncs = ReconcileRequests(writer, state)
        self._remote = RemoteStatus(writer, config.branch_states())
        self._signing = SigningKeys(self._reader, local.client, writer)
        self._writer = writer
        #: This process's start, as conditions record times (D2: ``ready_before``).
        self._started = rfc3339(clock())

    def read(self) -> Snapshot:
        """List everything a pass needs (KubeError when the local API fails)."""
        return Snapshot(
            clusters=self._reader.cluster_providers(),
            providers=self._reader.git_providers(),
            targets=with_recipients(self._reader.git_targets(), self._reader),
            rules=self._reader.watch_rules(),
            namespace_labels=self._reader.namespace_labels(),
            cluster_rules=self._reader.cluster_watch_rules(),
        )

    def reconcile(self) -> Plan:
        """One pass: status written, configs published, watches decided."""
        snap = self.read()
        self._check_epoch()
        if self._sealer is not None and any(t.encryption for t in snap.targets):
            self._sealer.use_master(
                ensure_master(
                    self._local, self._settings.namespace, self._settings.sops_fingerprint_secret
                )
            )
        states = reconcile_clusters(
            self._factory,
            snap.clusters,
            self._status,
            lambda routes: read_tokens(self._reader, self._settings.namespace, routes),
            self._audit_routes.joins if self._audit_routes is not None else None,
        )
        problems = reconcile_providers(snap.providers, self._reader, self._prober, self._status)
        if self._receivers is not None:
            publish_receivers(
                snap.providers, snap.targets, self._reader, self._local, self._receivers
            )
        if self._audit_routes is not None:
            self._audit_routes.publish(audit_routes(snap.clusters))
        world = World(
            providers={(p.meta.namespace, p.meta.name): p for p in snap.providers},
            provider_problems=problems,
            clusters={c.meta.name: c for c in snap.clusters},
            cluster_states=states,
            namespace_labels=snap.namespace_labels,
            branch_stalls=branch_problems(self._health.stalls()),
            signing_problems=self._signing.check(snap.targets),
        )
        served = self._targets.reconcile(snap.targets, world)
        self._metrics.gittargets.update(self._targets.rows)
        sync_suspensions(self._suspensions, served)  # P7: before their watches go on
        self._remote.track(served)
        self._signing.publish(snap.targets)
        publish_placement(self._writer, snap.targets)
        self._applier_status.track(snap.targets)
        verdicts = {
            (t.meta.namespace, t.meta.name): (t, verdict_of(t, world)) for t in snap.targets
        }
        reconcile_rules(snap.rules, verdicts, states, self._status)
        sources = Sources(world.clusters, snap.namespace_labels)
        reconcile_cluster_rules(snap.cluster_rules, verdicts, sources, states, self._status)
        catalogs = {name: s.catalog for name, s in states.items() if s.catalog is not None}
        clients = {name: s.cluster.client for name, s in states.items() if s.cluster is not None}
        desired = desired_watches(served, snap.rules, catalogs, self._started)
        desired.update(
            desired_cluster_watches(served, snap.cluster_rules, sources, catalogs, self._started)
        )
        self._publish_feeds(served, desired)
        self._resyncs.track(snap.targets, {s.target.meta.uid for s in served}, desired)
        return Plan(desired, clients, frozenset(t.meta.uid for t in snap.targets))

    def _publish_feeds(
        self, served: Sequence[ServedTarget], desired: Mapping[WatchKey, WatchSpec]
    ) -> None:
        """Record which watches feed each served GitTarget's branch, for the dispatcher's last
        check before it stamps (D3, issue 11); only what changed since the last pass."""
        feeds: dict[GitTargetUid, list[WatchFeed]] = {
            GitTargetUid(s.target.uid): [] for s in served
        }
        for key, spec in desired.items():
            r = spec.resource
            feed = WatchFeed(
                GitTargetUid(key.uid),
                r.group,
                r.version,
                r.resource,
                r.kind,
                key.namespace,
                spec.cluster,
                selection_key(spec.selectors),
            )
            feeds.setdefault(GitTargetUid(key.uid), []).append(feed)
        changed = {
            uid: listed for uid, listed in feeds.items() if self._feeds.get(uid) != set(listed)
        }
        self._state.publish_feeds(changed)
        self._feeds = {uid: set(listed) for uid, listed in feeds.items()}

    def _check_epoch(self) -> None:
        """C8: Redis came back empty (or was flushed) since the last pass: forget what this
        process remembers publishing, so the pass publishes every config again."""
        epoch = self._state.epoch(uuid.uuid4().hex)
        if self._epoch is not None and epoch != self._epoch:
            logger.warning("Redis lost the published configs; publishing them again")
            self._targets.forget_published()
            if self._receivers is not None:
                self._receivers.forget_published()
            self._feeds = {}
        self._epoch = epoch

    def forget_gone(self, live: frozenset[str], busy: set[GitTargetUid]) -> list[GitTargetUid]:
        """Forget GitTargets that are gone, once none of their watches runs any more."""
        return self._targets.forget_gone(live, busy)

    def publish_applier_status(self) -> int:
        """The light pass of O6: ``status.applier`` of GitTargets whose ledger entry moved, and
        ``status.lastHandledReconcileAt`` of those whose resync is out (P8), and
        ``status.remote`` where the branch's owner verified a new commit (P10)."""
        return self._applier_status.sync() + self._resyncs.sync() + self._remote.sync()

    def answer_resyncs(self) -> int:
        """``status.lastHandledReconcileAt`` of GitTargets whose resync is out (P8)."""
        return self._resyncs.sync()

    def close(self) -> None:
        """Stop the applier checks' threads."""
        self._checker.close()
