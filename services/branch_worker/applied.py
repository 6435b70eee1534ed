"""What each applier last applied, read once by a branch's very first owner (Q5, A1; issue 23).

The first owner of a branch has no tip observed before it, so it cannot tell an outside push
made just before it started (its webhook skipped, ``NoticeReader.start``) from what Git held
when the product was installed. The applier can: a ForeignCommit is owed exactly when the
commit it last applied is not the tip (``shared.decide.tips.first_start_owes``). This module
reads that commit: a Kustomization's ``status.lastAppliedRevision``, an Application's last
successful sync (``shared.decide.argo.synced_commit``); a webhook applier records nothing.

The read goes through the applier's ClusterProvider only when it admits a namespace of the
GitTargets naming the applier (the watcher's and the dispatcher's rule, S2, D2, T2). Anything
that cannot be read (no such ClusterProvider, not admitted, the API unreachable, the object
missing) is None: the applier is owed, and the attempt's own checks say what is wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from shared.appliers.reads import get_or_none
from shared.decide.applier_check import admission_problem
from shared.decide.argo import synced_commit
from shared.decide.attempt import flux_applied
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.flux import KUSTOMIZATIONS
from shared.kube.kinds import APPLICATIONS
from shared.model.config import ApplierRef

log = logging.getLogger(__name__)

#: The commit an applier last applied, for the namespaces of the GitTargets naming it; None
#: when it records none or cannot be read (then it is owed).
AppliedReader = Callable[[ApplierRef, Collection[str]], str | None]


def nothing_recorded(ref: ApplierRef, namespaces: Collection[str]) -> str | None:
    """No applier read at all (tests, and a worker built without a cluster): always owed."""
    return None


class AppliedRevisions:
    """``AppliedReader`` over the Kubernetes API, through the applier's ClusterProvider."""

    def __init__(self, reader: Callable[[], CrdReader], clusters: ClientFactory) -> None:
        self._reader = reader
        self._clusters = clusters

    def __call__(self, ref: ApplierRef, namespaces: Collection[str]) -> str | None:
        if ref.kind not in ("Kustomization", "Application"):
            return None  # a webhook applier records nothing we can read
        try:
            client = self._client(ref, namespaces)
            return None if client is None else _applied(client, ref)
        except KubeError as err:
            log.warning(
                "could not read what %s %s/%s last applied (%s): a ForeignCommit is owed",
                ref.kind,
                ref.namespace,
                ref.name,
                err,
            )
            return None

    def _client(self, ref: ApplierRef, namespaces: Collection[str]) -> KubeClient | None:
        return applier_client(self._reader, self._clusters, ref, namespaces)


def applier_client(
    reader: Callable[[], CrdReader],
    clusters: ClientFactory,
    ref: ApplierRef,
    namespaces: Collection[str],
) -> KubeClient | None:
    """The applier's cluster, when its ClusterProvider admits one of ``namespaces``."""
    crds = reader()
    found = [c for c in crds.cluster_providers() if c.meta.name == ref.cluster_provider]
    if not found:
        return None
    labels = crds.namespace_labels()
    if all(admission_problem(ref, ns, found[0], labels.get(ns, {})) for ns in namespaces):
        return None
    return clusters.for_provider(found[0]).client


def _applied(client: KubeClient, ref: ApplierRef) -> str | None:
    """The commit the applier object records as applied ("" when none), None when absent."""
    resource = KUSTOMIZATIONS if ref.kind == "Kustomization" else APPLICATIONS
    obj = get_or_none(client, resource, ref.namespace, ref.name)
    if obj is None:
        return None
    return flux_applied(obj) if ref.kind == "Kustomization" else synced_commit(obj)
