"""Publishing conditions: merge, write only on change, and an Event when Ready moves.

Every status write of the watcher goes through ``StatusPublisher.publish``: it keeps the
conditions it is not asked to set or drop (a GitTarget that no longer names an applier drops
``ApplierConfigured``), moves ``lastTransitionTime`` only on a status change, writes nothing
when nothing changed, and records a Kubernetes Event when an object's Ready status or reason
moved (``Normal`` when Ready, else ``Warning``), or when it stays Ready with a new message (a
GitTarget's says what its last push carried). A write that loses a race (Conflict) is left
to the next reconcile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from services.watcher.metrics import WatcherMetrics
from shared.decide.conditions import TRUE, Wanted, changed, merge, ready_news
from shared.kube.errors import KubeError
from shared.kube.status import EventType, StatusWriter
from shared.model.crds import Condition, Meta
from shared.model.resources import ApiResource

logger = logging.getLogger(__name__)


class StatusPublisher:
    """Writes conditions of one cluster's objects when they change."""

    def __init__(
        self, writer: StatusWriter, metrics: WatcherMetrics, clock: Callable[[], float]
    ) -> None:
        self._writer = writer
        self._metrics = metrics
        self._clock = clock

    def publish(
        self,
        res: ApiResource,
        meta: Meta,
        current: Sequence[Condition],
        wanted: Sequence[Wanted],
        with_events: bool = False,
        *,
        drop: Collection[str] = (),
    ) -> bool:
        """Store the wanted conditions (without the ``drop`` types) if anything changes.

        True when a write happened.
        """
        merged = merge(current, wanted, meta.generation, self._clock())
        merged = tuple(c for c in merged if c.type not in drop)
        if not changed(current, merged):
            return False
        where = f"{res.kind} {meta.namespace}/{meta.name}"
        try:
            self._writer.write_conditions(res, meta, merged)
        except KubeError as err:
            logger.warning("status of %s not written: %s", where, err)
            return False
        self._metrics.status_writes.labels(res.kind).inc()
        moved = ready_news(current, merged) if with_events else None
        if moved is not None:
            kind: EventType = "Normal" if moved.status == TRUE else "Warning"
            try:
                self._writer.record_event(res, meta, kind, moved.reason, moved.message)
            except KubeError as err:
                logger.warning("event for %s not recorded: %s", where, err)
        return True
