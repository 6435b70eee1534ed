"""ClusterProviders: reach each cluster, read its discovery, and report it in status.

A ClusterProvider is Ready when its client can be built (its kubeconfig Secret exists and
holds a usable kubeconfig) and the cluster's discovery can be read. The discovery snapshot
it yields is what WatchRules resolve against; a cluster that cannot be read has none, so no
watch runs through it and the WatchRules and GitTargets that use it say why.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.watcher.status import StatusPublisher
from shared.decide.conditions import Problem, trio
from shared.kube.clients import ClientFactory, Cluster, KubeConfigError
from shared.kube.errors import KubeError
from shared.kube.kinds import CLUSTER_PROVIDERS
from shared.model.crds import ClusterProviderView
from shared.model.resources import Catalog

CLUSTER_UNREACHABLE = "ClusterUnreachable"


@dataclass(frozen=True, slots=True)
class ClusterState:
    """One ClusterProvider this pass: its cluster and catalog, or why there is none."""

    cluster: Cluster | None
    catalog: Catalog | None
    problem: Problem | None


def observe_cluster(factory: ClientFactory, provider: ClusterProviderView) -> ClusterState:
    """Build the client and read discovery; a failure becomes the ClusterProvider's problem."""
    try:
        cluster = factory.for_provider(provider)
    except KubeConfigError as err:
        return ClusterState(None, None, Problem(err.reason, str(err)))
    except KubeError as err:
        return ClusterState(None, None, Problem(CLUSTER_UNREACHABLE, str(err), permanent=False))
    try:
        catalog = cluster.discovery.catalog()
    except KubeError as err:
        return ClusterState(cluster, None, Problem(CLUSTER_UNREACHABLE, str(err), permanent=False))
    return ClusterState(cluster, catalog, None)


def reconcile_clusters(
    factory: ClientFactory, providers: list[ClusterProviderView], status: StatusPublisher
) -> dict[str, ClusterState]:
    """Every ClusterProvider's state, with its conditions written when they changed."""
    states: dict[str, ClusterState] = {}
    for provider in providers:
        state = observe_cluster(factory, provider)
        states[provider.meta.name] = state
        problems = [state.problem] if state.problem else []
        status.publish(CLUSTER_PROVIDERS, provider.meta, provider.conditions, trio(problems))
    factory.forget(set(states))
    return states
