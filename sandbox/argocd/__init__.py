"""Argo CD double: an application-controller that follows the real protocol.

It runs against the sandbox API server through the official ``kubernetes`` client and against
the sandbox Git host with real ``git``, and behaves as ../shared/facts/appliers.md A1-A6 say:
``status.sync``/``reconciledAt`` kept on a timer and on the refresh annotation (removed
afterwards), automated sync with its guards and selfHeal, the top-level ``operation``
consumed into ``status.operationState`` (Running, retries, sync windows, Succeeded/Failed/
Error, ``operation: null``), writes as field manager ``argocd-controller`` with the tracking
annotation, prune on request, and ``status.history``. Use::

    argo = ArgoCDController(kube.api_client(), workdir, settings=Settings(reconciliation_s=5))
    argo.start()
    argo.log.wait_for(lambda r: r.action == FINISHED and r.name == "web", timeout=10)
    argo.stop()

or, with an injected clock and no threads, ``argo.reconcile_due()``.
"""

from sandbox.argocd.cluster import Pacing
from sandbox.argocd.controller import ArgoCDController
from sandbox.argocd.policy import SyncWindow
from sandbox.argocd.workspace import (
    AUTO_SYNC,
    BLOCKED,
    COMPARED,
    FINISHED,
    RETRY_WAIT,
    STARTED,
    Settings,
)

__all__ = [
    "AUTO_SYNC",
    "BLOCKED",
    "COMPARED",
    "FINISHED",
    "RETRY_WAIT",
    "STARTED",
    "ArgoCDController",
    "Pacing",
    "Settings",
    "SyncWindow",
]
