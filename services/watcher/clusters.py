"""ClusterProviders: reach each cluster, read its discovery, and report it in status.

A ClusterProvider is Ready when its client can be built (its kubeconfig Secret exists and
holds a usable kubeconfig) and the cluster's discovery can be read. The discovery snapshot
it yields is what WatchRules resolve against; a cluster that cannot be read has none, so no
watch runs through it and the WatchRules and GitTargets that use it say why.

A ClusterProvider with ``spec.attribution`` also shows ``AttributionConfigured`` (P5): True
when its audit route is served with its token Secret; False, ``AuditRouteConflict``, when
another ClusterProvider sharing the route names another Secret and serves it (the first by
name does, ``targets.audit_routes``), so the losing one's token is never checked. Without
``spec.attribution`` the condition is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.watcher.status import StatusPublisher
from shared.decide.conditions import FALSE, TRUE, Problem, Wanted, trio
from shared.kube.clients import ClientFactory, Cluster, KubeConfigError
from shared.kube.errors import KubeError
from shared.kube.kinds import CLUSTER_PROVIDERS
from shared.model.crds import ClusterProviderView
from shared.model.resources import Catalog
from shared.store.attribution import AuditRoute

CLUSTER_UNREACHABLE = "ClusterUnreachable"
#: P5: the ClusterProvider's audit route is (or is not) served with its token Secret.
ATTRIBUTION_CONFIGURED = "AttributionConfigured"
ROUTE_SERVED = "AuditRouteServed"
AUDIT_ROUTE_CONFLICT = "AuditRouteConflict"


@dataclass(frozen=True, slots=True)
class ClusterState:
    """One ClusterProvider this pass: its cluster and catalog, or why there is none."""

    cluster: Cluster | None
    catalog: Catalog | None
    problem: Problem | None


def audit_routes(clusters: Iterable[ClusterProviderView]) -> dict[str, AuditRoute]:
    """The audit routes the ClusterProviders set (``spec.attribution``); ClusterProviders that
    share a route must name one Secret: the first by name is kept (the others show
    ``AttributionConfigured=False AuditRouteConflict``)."""
    routes: dict[str, AuditRoute] = {}
    for cluster in sorted(clusters, key=lambda c: c.meta.name):
        spec = cluster.attribution
        if spec is not None and spec.audit_route not in routes:
            routes[spec.audit_route] = AuditRoute(
                spec.audit_route, cluster.meta.name, spec.token_secret, spec.token_key
            )
    return routes


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
    routes = audit_routes(providers)
    for provider in providers:
        state = observe_cluster(factory, provider)
        states[provider.meta.name] = state
        problems = [state.problem] if state.problem else []
        wanted = trio(problems)
        attribution = attribution_condition(provider, routes)
        if attribution is not None:
            wanted.append(attribution)
        status.publish(
            CLUSTER_PROVIDERS,
            provider.meta,
            provider.conditions,
            wanted,
            drop=() if attribution is not None else (ATTRIBUTION_CONFIGURED,),
        )
    factory.forget(set(states))
    return states


def attribution_condition(
    provider: ClusterProviderView, routes: Mapping[str, AuditRoute]
) -> Wanted | None:
    """P5: ``AttributionConfigured`` of a ClusterProvider (None: it has no attribution).
    ClusterProviders reading one cluster share its route with one Secret; one that names
    another Secret for a route served by another ClusterProvider is told so."""
    spec = provider.attribution
    if spec is None:
        return None
    route = routes.get(spec.audit_route)
    path = f"/audit-webhook/{spec.audit_route}"
    if route is None or (route.secret_name, route.secret_key) == (
        spec.token_secret,
        spec.token_key,
    ):
        return Wanted(
            ATTRIBUTION_CONFIGURED, TRUE, ROUTE_SERVED, f"audit events are read at {path}"
        )
    return Wanted(
        ATTRIBUTION_CONFIGURED,
        FALSE,
        AUDIT_ROUTE_CONFLICT,
        f"the audit route {spec.audit_route} is served by ClusterProvider {route.provider} "
        f"with the token of Secret {route.secret_name} (key {route.secret_key}); this "
        f"ClusterProvider's Secret {spec.token_secret} (key {spec.token_key}) is not used: "
        "name the same Secret, or set another spec.attribution.auditRoute",
    )
