"""CommitRequests on the watcher (P6): publish each to its GitTarget's branch, project
the branch worker's outcome onto its status, and delete it once finished for the TTL.

One pass lists the CommitRequests (and, only when there are some, the GitTargets); it runs on
the watcher's light period (``Settings.applier_status_period``, 2 s), so a request reaches its
branch within seconds whatever the reconcile period. A request is published once: the pass
publishes only what Redis has not recorded as published (a crash between the two publishes
it again, and the branch worker ignores the duplicate by uid). A request whose status shows a
final outcome is never published again, nor its status rewritten, when Redis has no record of
it (a Redis that came back empty): bound again, it would title an unrelated commit (N10).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from shared.decide.commit_requests import (
    TARGET_NOT_FOUND,
    TARGET_NOT_READY,
    concluded,
    conditions,
    expired,
)
from shared.decide.conditions import Problem, changed, merge
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError, NotFound
from shared.kube.kinds import COMMIT_REQUESTS
from shared.kube.status import StatusWriter
from shared.model.commit_requests import CommitRequestItem, CommitRequestView, Outcome
from shared.model.crds import GitTargetView
from shared.model.events import GitTargetRef
from shared.model.ids import GitTargetUid
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.streams import EventStream

logger = logging.getLogger(__name__)


class CommitRequestSync:
    """One cluster's CommitRequests, kept moving each light pass."""

    def __init__(
        self,
        client: KubeClient,
        writer: StatusWriter,
        *,
        configs: ConfigStore,
        events: EventStream,
        store: CommitRequests,
        clock: Callable[[], float],
        ttl_s: float,
    ) -> None:
        self._client = client
        self._reader = CrdReader(client)
        self._writer = writer
        self._configs = configs
        self._events = events
        self._store = store
        self._clock = clock
        self._ttl_s = ttl_s

    def sync(self) -> int:
        """One pass; returns how many requests it looked at."""
        requests = self._reader.commit_requests()
        if not requests:
            return 0
        targets = {(t.meta.namespace, t.meta.name): t for t in self._reader.git_targets()}
        now = self._clock()
        live = [r for r in requests if not self._expire(r, now)]
        progress = self._store.progress([r.meta.uid for r in live])
        for request in live:
            published, outcome = progress[request.meta.uid]
            if outcome is None and concluded(request.conditions):
                continue  # finished, and Redis forgot it (N10): its status is the record
            problem: Problem | None = None
            if outcome is None and not published:
                problem = self._publish(request, targets)
            self._report(request, outcome, problem)
        return len(requests)

    def _expire(self, request: CommitRequestView, now: float) -> bool:
        """P6: delete a request finished ``ttl_s`` ago; True when it is gone."""
        if not expired(request.conditions, now, self._ttl_s):
            return False
        meta = request.meta
        try:
            self._client.delete(COMMIT_REQUESTS, meta.namespace, meta.name, meta.uid)
        except NotFound:
            pass
        except KubeError as err:
            logger.warning("CommitRequest %s/%s not deleted: %s", meta.namespace, meta.name, err)
            return True  # tried again next pass
        self._store.forget(meta.uid)
        logger.info("deleted finished CommitRequest %s/%s", meta.namespace, meta.name)
        return True

    def _publish(
        self, request: CommitRequestView, targets: dict[tuple[str, str], GitTargetView]
    ) -> Problem | None:
        """Put the request on its GitTarget's branch; the problem when it cannot go (P6)."""
        meta = request.meta
        view = targets.get((meta.namespace, request.target))
        if view is None:
            return Problem(
                TARGET_NOT_FOUND,
                f"GitTarget {meta.namespace}/{request.target} does not exist",
                permanent=True,
            )
        uid = GitTargetUid(view.meta.uid)
        config = self._configs.target(uid)
        if config is None or config.key_held:  # not served (P6: held for its signing key)
            return Problem(
                TARGET_NOT_READY,
                f"GitTarget {meta.namespace}/{request.target} is not ready (see its conditions)",
                permanent=False,
            )
        item = CommitRequestItem(
            target=GitTargetRef(uid, meta.namespace, request.target),
            uid=meta.uid,
            namespace=meta.namespace,
            name=meta.name,
            message=request.message,
            close_delay_s=request.close_delay_s,
            resource_version=meta.resource_version,  # P5: the create's audit fact names it
        )
        self._events.publish(config.ref.key, item)
        self._store.mark_published(meta.uid, self._clock())
        return None

    def _report(
        self, request: CommitRequestView, outcome: Outcome | None, problem: Problem | None
    ) -> None:
        """Write the conditions, with ``branch`` and ``sha`` once pushed, in one status write
        (nothing when nothing changed)."""
        meta = request.meta
        merged = merge(
            request.conditions, conditions(outcome, problem), meta.generation, self._clock()
        )
        extra = {"branch": outcome.branch, "sha": outcome.sha} if outcome and outcome.sha else {}
        moved = any(getattr(request, k) != v for k, v in extra.items())
        if not moved and not changed(request.conditions, merged):
            return
        try:
            self._writer.write_conditions(COMMIT_REQUESTS, meta, merged, extra=extra)
        except KubeError as err:  # a Conflict included: decided again next pass
            logger.warning(
                "status of CommitRequest %s/%s not written: %s", meta.namespace, meta.name, err
            )
