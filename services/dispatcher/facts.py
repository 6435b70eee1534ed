"""What an attempt reads, just before it acts: the GitTargets (D2) and the branch (D3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.decide.applier_check import admission_problem
from shared.decide.attempt import TargetFacts
from shared.kube.crds import CrdReader
from shared.model.crds import ClusterProviderView, GitProviderView, GitTargetView
from shared.model.ids import normalise_url
from shared.model.requests import ApplyRequest


def target_facts(request: ApplyRequest, reader: CrdReader) -> dict[str, TargetFacts]:
    """D2: each GitTarget the request names, read again now."""
    wanted = {uid for uids in request.reasons.values() for uid in uids}
    targets = {t.meta.uid: t for t in reader.git_targets() if t.meta.uid in wanted}
    providers = {(p.meta.namespace, p.meta.name): p for p in reader.git_providers()}
    clusters = {c.meta.name: c for c in reader.cluster_providers()}
    labels = reader.namespace_labels()
    world = _World(providers, clusters, labels)
    return {uid: _facts(uid, targets.get(uid), request, world) for uid in wanted}


@dataclass(frozen=True, slots=True)
class _World:
    providers: Mapping[tuple[str, str], GitProviderView]
    clusters: Mapping[str, ClusterProviderView]
    labels: Mapping[str, Mapping[str, str]]


def _facts(
    uid: str, target: GitTargetView | None, request: ApplyRequest, world: _World
) -> TargetFacts:
    if target is None:
        return TargetFacts(uid, False, False, False, False, False)
    provider = world.providers.get((target.meta.namespace, target.provider))
    on_branch = (
        provider is not None
        and target.branch == request.branch
        and (normalise_url(provider.url) == normalise_url(request.url))
    )
    ns = target.meta.namespace
    cluster = world.clusters.get(request.applier.cluster_provider)
    # The watcher's rule (S2), so the two never judge apart: admitted, and (T2) an applier in
    # another namespace allowed for this one, as the ClusterProvider says now.
    admitted = admission_problem(request.applier, ns, cluster, world.labels.get(ns, {})) is None
    return TargetFacts(
        uid,
        True,
        target.applier == request.applier,  # ApplierRef is the applier's identity only
        on_branch,
        admitted,
        target.on_refusal == "Reapply",
        suspended=target.controls.suspended,
    )


def target_views(request: ApplyRequest, reader: CrdReader) -> dict[str, GitTargetView]:
    """The live GitTargets of the request, by uid (for Events and the ledger)."""
    wanted = {uid for uids in request.reasons.values() for uid in uids}
    return {t.meta.uid: t for t in reader.git_targets() if t.meta.uid in wanted}
