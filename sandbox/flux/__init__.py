"""Flux doubles: a source-controller and a kustomize-controller that follow the real protocol.

They run against the sandbox API server through the official ``kubernetes`` client and
against the sandbox Git host with real ``git``, and behave as ../shared/facts/appliers.md
F1-F3 say (requestedAt handling, ``<branch>@sha1:<sha>`` artifact revisions, a new revision
waking its Kustomizations, server-side apply with field manager ``kustomize-controller`` and
force, ``lastAttemptedRevision`` before and ``lastAppliedRevision`` after, intervals, suspend,
prune). Use::

    flux = FluxControllers(kube.api_client(), workdir)
    flux.start()
    flux.log.wait_applied("default", "app", revision, timeout=10)
    flux.stop()

or, with an injected clock and no threads, ``flux.reconcile_due()``. An apply waits a few
seconds by default, as a real one does (``sandbox.flux.pacing``); pass ``pacing=Pacing()`` for
speed, or close ``flux.pacing.gate`` to hold every apply.
"""

from sandbox.flux.activity import ActivityLog, Record
from sandbox.flux.controllers import FluxControllers
from sandbox.flux.pacing import Pacing

__all__ = ["ActivityLog", "FluxControllers", "Pacing", "Record"]
