"""The watcher process: reconcile passes on a period, and the watches they ask for (fed by one
shared watch per resource type, ``services.watcher.sharing``).

``Watcher.run`` reconciles every ``Settings.reconcile_period`` until ``stop`` is set, then
stops every watch after the event in hand; a light thread publishes ``status.applier`` from
the ledger in between (O6). ``Watcher.run_burst`` makes one pass, lets every
watch list or resume and drain until a short watch request sees nothing new, and returns
(tests and ``--burst``, like rq's ``work(burst=True)``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.watcher.channel import WatchDeps
from services.watcher.commit_requests import CommitRequestSync
from services.watcher.encryption import Sealer
from services.watcher.hub import Member, WatchHub
from services.watcher.metrics import WatcherMetrics
from services.watcher.reconcile import COMPONENT, AppliersSetup, Plan, Reconciler
from services.watcher.supervisor import Supervisor
from shared.decide.watches import WatchSpec
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.status import StatusWriter
from shared.model.ids import GitTargetUid
from shared.settings import Settings
from shared.store.attribution import AuditRoutes
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.ledger import Ledger
from shared.store.receivers import ReceiverDirectory
from shared.store.streams import EventStream
from shared.store.watches import WatchState

logger = logging.getLogger(__name__)

#: timeoutSeconds of a watch request in normal operation: long enough to be cheap, short
#: enough that a stuck stream is noticed (the server double and real servers both honour it).
SESSION_S = 300
#: timeoutSeconds of a watch request in burst mode: one quiet second means drained.
BURST_SESSION_S = 1


@dataclass(frozen=True, slots=True)
class WatcherParts:
    """What a watcher is built from; tests hand in a client for the sandbox and a registry."""

    settings: Settings
    events: EventStream
    config: ConfigStore
    state: WatchState
    factory: ClientFactory
    metrics: WatcherMetrics
    ledger: Ledger
    clock: Callable[[], float] = time.time
    receivers: ReceiverDirectory | None = None  # None: receiver records are not published
    #: CommitRequest progress (P6); None: CommitRequests are not handled.
    commit_requests: CommitRequests | None = None
    audit_routes: AuditRoutes | None = None  # None: audit routes are not published


class Watcher:
    """Reconciles our custom resources and runs the watches they ask for."""

    def __init__(self, parts: WatcherParts, burst: bool = False) -> None:
        self._parts = parts
        self._burst = burst
        sealer = Sealer(clock=parts.clock)
        self._deps = WatchDeps(
            events=parts.events,
            state=parts.state,
            metrics=parts.metrics,
            clock=parts.clock,
            session_s=BURST_SESSION_S if burst else SESSION_S,
            burst=burst,
            sealer=sealer,
        )
        self._reconciler = Reconciler(
            parts.factory,
            parts.config,
            parts.state,
            parts.metrics,
            parts.clock,
            appliers=AppliersSetup(parts.settings, parts.ledger),
            receivers=parts.receivers,
            audit_routes=parts.audit_routes,
            sealer=sealer,
        )
        self._requests: CommitRequestSync | None = None
        if parts.commit_requests is not None:
            local = parts.factory.local().client
            self._requests = CommitRequestSync(
                local,
                StatusWriter(local, COMPONENT, parts.clock),
                configs=parts.config,
                events=parts.events,
                store=parts.commit_requests,
                clock=parts.clock,
                ttl_s=parts.settings.commit_request_ttl.total_seconds(),
            )
        self._hub = WatchHub(self._deps, parts.settings.namespace_watches)
        self._supervisor = Supervisor(self._worker)
        self._clients: dict[str, KubeClient] = {}
        self.stop_event = threading.Event()

    def _worker(self, spec: WatchSpec) -> Member | None:
        client = self._clients.get(spec.cluster)
        return self._hub.member(spec, client) if client is not None else None

    def feeders(self) -> int:
        """Feeders of watches now: one per shared watch (a resource type on a cluster: a
        stream's thread and an admitting thread), one per namespace watch of the fallback
        (issue 29)."""
        return self._hub.feeders()

    def reconcile_once(self) -> Plan:
        """One pass, performed: watches started and stopped, gone GitTargets forgotten."""
        plan = self._reconciler.reconcile()
        self._clients = plan.clients
        self._supervisor.apply(plan.desired)
        busy = {GitTargetUid(key.uid) for key in self._supervisor.busy_keys()}
        gone = self._reconciler.forget_gone(plan.target_uids, busy)
        for uid in gone:
            logger.info("forgot GitTarget %s", uid)
        return plan

    def run_burst(self) -> Plan:
        """One pass, then every watch until it is drained (or ``stop_event`` is set)."""
        plan = self.reconcile_once()
        self.sync_commit_requests()
        if not self._supervisor.wait(self.stop_event):
            self._supervisor.stop_all()
        self._reconciler.answer_resyncs()  # P8: the drained watches handled their requests
        return plan

    def publish_applier_status(self) -> int:
        """One light pass (O6): publish ``status.applier`` where the ledger moved."""
        return self._reconciler.publish_applier_status()

    def sync_commit_requests(self) -> int:
        """One pass over the CommitRequests (P6); 0 when they are not handled."""
        return self._requests.sync() if self._requests is not None else 0

    def _applier_status_loop(self) -> None:
        period = self._parts.settings.applier_status_period.total_seconds()
        while not self.stop_event.wait(period):
            try:
                self.publish_applier_status()
            except Exception:  # the outermost loop of its thread: retried next period
                logger.exception("status.applier pass failed")
            try:
                self.sync_commit_requests()
            except Exception:  # the same: retried next period
                logger.exception("CommitRequest pass failed")

    def run(self) -> None:
        """Reconcile on a period until ``stop_event`` is set, then stop every watch.

        Beside the passes, a thread publishes ledger changes every
        ``Settings.applier_status_period`` (O6).
        """
        period = self._parts.settings.reconcile_period.total_seconds()
        light = threading.Thread(
            target=self._applier_status_loop, name="applier-status", daemon=True
        )
        light.start()
        while not self.stop_event.is_set():
            try:
                self.reconcile_once()
            except Exception:  # the outermost loop: a failed pass is retried next period
                logger.exception("reconcile pass failed")
            self.stop_event.wait(period)
        light.join()
        self._supervisor.stop_all()

    def request_stop(self) -> None:
        """Finish the work in hand and end (safe from a signal handler)."""
        self.stop_event.set()

    def close(self) -> None:
        """Stop every watch and release the clients."""
        self._supervisor.stop_all()
        self._reconciler.close()
        self._parts.factory.close()
