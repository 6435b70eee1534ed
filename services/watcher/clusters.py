"""ClusterProviders: reach each cluster, read its discovery, and report it in status.

A ClusterProvider is Ready when its client can be built (its kubeconfig Secret exists and
holds a usable kubeconfig) and the cluster's discovery can be read. The discovery snapshot
it yields is what WatchRules resolve against; a cluster that cannot be read has none, so no
watch runs through it and the WatchRules and GitTargets that use it say why.

A ClusterProvider with ``spec.attribution`` also shows ``AttributionConfigured`` (P5): True
when its audit route is served with its token Secret; False, ``AuditRouteConflict``, when
another ClusterProvider sharing the route names another Secret and serves it (the first by
name does, ``audit_routes``), so the losing one's token is never checked; False,
``TokenSecretNotFound``, ``TokenSecretInvalid`` (no such key, or it is empty) or
``TokenSecretUnreadable`` (the API refused or failed the read), when the Secret serving its
route holds no usable token, so the receiver cannot check one and answers the route 503. The
Secret is read once per pass and route (no Secret is watched): the condition turns True on the
first pass after the Secret is fixed. Without ``spec.attribution`` the condition is removed.

It also shows ``AuditFactsReceived`` (N5): whether the edits read through its route find their
audit facts, as the branch owners last judged them (``shared.decide.attribution
.facts_received``): True ``FactsJoined``, False ``NoAuditFacts`` while edits find none within
the grace (facts stopped arriving), Unknown ``NoEditsJudged`` before any edit was judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from services.watcher.status import StatusPublisher
from shared.decide.attribution import facts_received
from shared.decide.conditions import FALSE, TRUE, Problem, Wanted, trio
from shared.kube.clients import ClientFactory, Cluster, KubeConfigError
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.kinds import CLUSTER_PROVIDERS
from shared.model.attribution import RouteJoins
from shared.model.crds import ClusterProviderView
from shared.model.resources import Catalog
from shared.store.attribution import AuditRoute

CLUSTER_UNREACHABLE = "ClusterUnreachable"
#: P5: the ClusterProvider's audit route is (or is not) served with its token Secret.
ATTRIBUTION_CONFIGURED = "AttributionConfigured"
ROUTE_SERVED = "AuditRouteServed"
AUDIT_ROUTE_CONFLICT = "AuditRouteConflict"
#: P5: the Secret serving the route holds no usable token (the receiver answers it 503).
TOKEN_SECRET_NOT_FOUND = "TokenSecretNotFound"
TOKEN_SECRET_INVALID = "TokenSecretInvalid"
TOKEN_SECRET_UNREADABLE = "TokenSecretUnreadable"
#: N5: whether the edits read through the route find their audit facts.
AUDIT_FACTS_RECEIVED = "AuditFactsReceived"

#: How a route's edits last fared in the join (``AuditRoutes.joins``).
JoinsOf = Callable[[str], RouteJoins | None]

#: How the Secret serving a route read: its data, None (no such Secret), or the read's error.
SecretRead = Mapping[str, bytes] | None | KubeError


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


def token_problem(namespace: str, route: AuditRoute, read: SecretRead) -> tuple[str, str] | None:
    """Why the Secret serving ``route`` gives the receiver no token to check (reason, message),
    or None when it holds one. The receiver strips the token before comparing, so a value of
    only whitespace is no token either."""
    where = f"Secret {namespace}/{route.secret_name}"
    after = f"the receiver answers /audit-webhook/{route.route} 503 until it is fixed"
    if isinstance(read, KubeError):
        return TOKEN_SECRET_UNREADABLE, f"{where} (the audit route's token) unreadable: {read}"
    if read is None:
        return TOKEN_SECRET_NOT_FOUND, f"{where} (the audit route's token) not found: {after}"
    if not read.get(route.secret_key, b"").strip():
        return TOKEN_SECRET_INVALID, (
            f"{where} has no non-empty key {route.secret_key} (the audit route's token): {after}"
        )
    return None


def read_tokens(
    reader: CrdReader, namespace: str, routes: Mapping[str, AuditRoute]
) -> dict[str, tuple[str, str] | None]:
    """Each route's ``token_problem``, its Secret read once (shared Secrets too)."""
    reads: dict[str, SecretRead] = {}
    found: dict[str, tuple[str, str] | None] = {}
    for name, route in routes.items():
        if route.secret_name not in reads:
            try:
                reads[route.secret_name] = reader.secret_data(namespace, route.secret_name)
            except KubeError as err:
                reads[route.secret_name] = err
        found[name] = token_problem(namespace, route, reads[route.secret_name])
    return found


def reconcile_clusters(
    factory: ClientFactory,
    providers: list[ClusterProviderView],
    status: StatusPublisher,
    tokens: Callable[[Mapping[str, AuditRoute]], Mapping[str, tuple[str, str] | None]],
    joins: JoinsOf | None = None,
) -> dict[str, ClusterState]:
    """Every ClusterProvider's state, with its conditions written when they changed;
    ``tokens`` tells, per audit route, why its Secret holds no token (``read_tokens``);
    ``joins`` how a route's edits last fared in the join (None: not shown)."""
    states: dict[str, ClusterState] = {}
    routes = audit_routes(providers)
    problems_of = tokens(routes) if routes else {}
    for provider in providers:
        state = observe_cluster(factory, provider)
        states[provider.meta.name] = state
        problems = [state.problem] if state.problem else []
        wanted = trio(problems)
        attribution = attribution_condition(provider, routes, problems_of)
        facts = facts_condition(provider, joins)
        wanted.extend(c for c in (attribution, facts) if c is not None)
        drop = () if attribution is not None else (ATTRIBUTION_CONFIGURED,)
        status.publish(
            CLUSTER_PROVIDERS,
            provider.meta,
            provider.conditions,
            wanted,
            drop=drop + (() if facts is not None else (AUDIT_FACTS_RECEIVED,)),
        )
    factory.forget(set(states))
    return states


def attribution_condition(
    provider: ClusterProviderView,
    routes: Mapping[str, AuditRoute],
    token_problems: Mapping[str, tuple[str, str] | None] | None = None,
) -> Wanted | None:
    """P5: ``AttributionConfigured`` of a ClusterProvider (None: it has no attribution).
    ClusterProviders reading one cluster share its route with one Secret; one that names
    another Secret for a route served by another ClusterProvider is told so; one whose route
    is served with its Secret is told when that Secret holds no token (``token_problems``, by
    route: ``token_problem``'s answer; a route not in it counts as having one)."""
    spec = provider.attribution
    if spec is None:
        return None
    route = routes.get(spec.audit_route)
    path = f"/audit-webhook/{spec.audit_route}"
    if route is None or (route.secret_name, route.secret_key) == (
        spec.token_secret,
        spec.token_key,
    ):
        problem = (token_problems or {}).get(spec.audit_route)
        if problem is not None:
            return Wanted(ATTRIBUTION_CONFIGURED, FALSE, *problem)
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


def facts_condition(provider: ClusterProviderView, joins: JoinsOf | None) -> Wanted | None:
    """N5: ``AuditFactsReceived`` of a ClusterProvider with attribution (None without it, or
    when the joins are not read)."""
    if provider.attribution is None or joins is None:
        return None
    route = provider.attribution.audit_route
    return Wanted(AUDIT_FACTS_RECEIVED, *facts_received(route, joins(route)))
