"""Suspending and resuming GitTargets in Redis as their ``spec.suspend`` says (P7).

Each reconcile pass compares the served GitTargets' ``spec.suspend`` with the suspended set
(``shared.store.suspension``): a GitTarget newly suspended is marked before its watches start
or go on, so what they publish from then on waits in its backlog; one resumed has its backlog
moved onto its branch's stream, in the order it was collected, in one Redis call. A GitTarget
that is not served keeps its mark and backlog until it is served again or forgotten.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from shared.decide.watches import ServedTarget
from shared.store.suspension import Suspensions

logger = logging.getLogger(__name__)


def sync_suspensions(store: Suspensions, served: Iterable[ServedTarget]) -> None:
    """Mark the newly suspended served GitTargets, resume the others that are marked."""
    marked = store.suspended()
    for s in served:
        target = s.target
        where = {"gittarget": f"{target.meta.namespace}/{target.meta.name}", "branch": s.branch}
        if target.controls.suspended and target.uid not in marked:
            store.suspend(target.uid)
            logger.info("GitTarget suspended: its writes wait until it is resumed", extra=where)
        elif not target.controls.suspended and target.uid in marked:
            moved = store.resume(target.uid, s.branch)
            logger.info(
                "GitTarget resumed: %d object(s) edited meanwhile go to its branch",
                moved,
                extra=where,
            )
