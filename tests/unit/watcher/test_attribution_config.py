"""ClusterProvider ``spec.attribution`` read, published as audit routes, and carried on each
GitTarget's settings (P5; facts: upstream-gitops-reverser.md §2.5: the route defaults to the
provider's name, several providers reading one cluster share it)."""

from __future__ import annotations

from services.watcher.clusters import audit_routes
from shared.model.crds import AttributionSpec, parse_cluster_provider
from shared.store.attribution import AuditRoute


def _cp(name: str, attribution: object = None) -> dict[str, object]:
    spec: dict[str, object] = {"accessFrom": {"selector": {}}}
    if attribution is not None:
        spec["attribution"] = attribution
    return {"metadata": {"name": name}, "spec": spec}


def test_the_route_defaults_to_the_name_and_the_key_to_token() -> None:
    view = parse_cluster_provider(_cp("prod", {"tokenSecretRef": {"name": "tok"}}))
    assert view.attribution == AttributionSpec("prod", "tok", "token")
    assert parse_cluster_provider(_cp("off")).attribution is None
    assert parse_cluster_provider(_cp("bad", {"auditRoute": "x"})).attribution is None


def test_routes_are_published_once_per_route_first_provider_by_name() -> None:
    a = parse_cluster_provider(_cp("a", {"auditRoute": "shared", "tokenSecretRef": {"name": "ta"}}))
    b = parse_cluster_provider(_cp("b", {"auditRoute": "shared", "tokenSecretRef": {"name": "tb"}}))
    off = parse_cluster_provider(_cp("c"))
    assert audit_routes([b, off, a]) == {"shared": AuditRoute("shared", "a", "ta", "token")}


def test_a_provider_sharing_a_route_with_another_secret_shows_the_conflict() -> None:
    """P5: the first ClusterProvider by name serves a shared route; another naming the same
    Secret shares it (True), one naming another Secret is told (AuditRouteConflict), and a
    ClusterProvider without attribution gets no condition."""
    from services.watcher.clusters import attribution_condition

    a = parse_cluster_provider(_cp("a", {"auditRoute": "shared", "tokenSecretRef": {"name": "ta"}}))
    same = parse_cluster_provider(
        _cp("b", {"auditRoute": "shared", "tokenSecretRef": {"name": "ta"}})
    )
    other = parse_cluster_provider(
        _cp("c", {"auditRoute": "shared", "tokenSecretRef": {"name": "tc"}})
    )
    off = parse_cluster_provider(_cp("d"))
    routes = audit_routes([other, same, a, off])
    found = {p.meta.name: attribution_condition(p, routes) for p in (a, same, other, off)}
    assert found["d"] is None
    assert [(w.status, w.reason) for w in (found["a"], found["b"]) if w] == [
        ("True", "AuditRouteServed"),
        ("True", "AuditRouteServed"),
    ]
    conflict = found["c"]
    assert conflict is not None
    assert (conflict.type, conflict.status, conflict.reason) == (
        "AttributionConfigured",
        "False",
        "AuditRouteConflict",
    )
    assert "ClusterProvider a" in conflict.message and "tc" in conflict.message


def test_the_token_secret_is_judged_as_the_receiver_reads_it() -> None:
    """P5: the Secret serving a route must hold a non-empty token under its key (the receiver
    strips it before comparing); a missing Secret, a missing, empty or blank key, and a read
    the API refused each have their reason, and the message names the Secret."""
    from services.watcher.clusters import token_problem
    from shared.kube.errors import KubeError

    route = AuditRoute("prod", "prod", "audit-tok", "token")
    assert token_problem("gr", route, {"token": b"s3cret"}) is None
    reasons = {
        "missing": token_problem("gr", route, None),
        "no key": token_problem("gr", route, {"other": b"x"}),
        "empty": token_problem("gr", route, {"token": b""}),
        "blank": token_problem("gr", route, {"token": b" \n"}),
        "refused": token_problem("gr", route, KubeError("403 Forbidden")),
    }
    assert {k: v[0] if v else None for k, v in reasons.items()} == {
        "missing": "TokenSecretNotFound",
        "no key": "TokenSecretInvalid",
        "empty": "TokenSecretInvalid",
        "blank": "TokenSecretInvalid",
        "refused": "TokenSecretUnreadable",
    }
    assert all(v is not None and "Secret gr/audit-tok" in v[1] for v in reasons.values())
    assert "403 Forbidden" in str(reasons["refused"])


def test_a_route_whose_secret_holds_no_token_shows_it_on_every_provider_serving_it() -> None:
    """P5: ClusterProviders that serve a route with its Secret show that Secret's problem
    (False, its reason); one that lost the route keeps AuditRouteConflict (its own Secret is
    not used); without a problem the route is served (True)."""
    from services.watcher.clusters import attribution_condition

    a = parse_cluster_provider(_cp("a", {"auditRoute": "shared", "tokenSecretRef": {"name": "ta"}}))
    same = parse_cluster_provider(
        _cp("b", {"auditRoute": "shared", "tokenSecretRef": {"name": "ta"}})
    )
    other = parse_cluster_provider(
        _cp("c", {"auditRoute": "shared", "tokenSecretRef": {"name": "tc"}})
    )
    routes = audit_routes([a, same, other])
    missing = {"shared": ("TokenSecretNotFound", "Secret gr/ta (the audit route's token) ...")}
    found = {p.meta.name: attribution_condition(p, routes, missing) for p in (a, same, other)}
    assert {n: (w.status, w.reason) for n, w in found.items() if w} == {
        "a": ("False", "TokenSecretNotFound"),
        "b": ("False", "TokenSecretNotFound"),
        "c": ("False", "AuditRouteConflict"),
    }
    served = attribution_condition(a, routes, {"shared": None})
    assert served is not None and (served.status, served.reason) == ("True", "AuditRouteServed")


def test_each_token_secret_is_read_once_a_pass_and_a_refused_read_is_unreadable() -> None:
    """Two routes naming one Secret read it once; a read the API refuses is
    ``TokenSecretUnreadable`` for its route, and the others are judged on their own."""
    from typing import cast

    from services.watcher.clusters import read_tokens
    from shared.kube.crds import CrdReader
    from shared.kube.errors import KubeError

    class Reader:
        def __init__(self) -> None:
            self.reads: list[tuple[str, str]] = []

        def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
            self.reads.append((namespace, name))
            if name == "denied":
                raise KubeError("secrets is forbidden", 403)
            return {"token": b"t"} if name == "shared" else None

    reader = Reader()
    routes = {
        "a": AuditRoute("a", "a", "shared", "token"),
        "b": AuditRoute("b", "b", "shared", "token"),
        "c": AuditRoute("c", "c", "denied", "token"),
        "d": AuditRoute("d", "d", "gone", "token"),
    }
    found = read_tokens(cast(CrdReader, reader), "gr", routes)
    assert sorted(reader.reads) == [("gr", "denied"), ("gr", "gone"), ("gr", "shared")]
    assert {k: v[0] if v else None for k, v in found.items()} == {
        "a": None,
        "b": None,
        "c": "TokenSecretUnreadable",
        "d": "TokenSecretNotFound",
    }


def test_audit_facts_received_says_how_the_route_s_edits_last_fared() -> None:
    """N5: AuditFactsReceived is Unknown before any edit through the route was judged, False
    NoAuditFacts (with since when) while edits find no fact within the grace, True once one
    finds it; a ClusterProvider without attribution gets none."""
    from services.watcher.clusters import facts_condition
    from shared.model.attribution import RouteJoins

    prod = parse_cluster_provider(_cp("prod", {"tokenSecretRef": {"name": "tok"}}))
    off = parse_cluster_provider(_cp("off"))
    known: dict[str, RouteJoins] = {}
    assert facts_condition(off, known.get) is None
    assert facts_condition(prod, None) is None  # joins not read: nothing to show
    unknown = facts_condition(prod, known.get)
    assert unknown is not None
    assert (unknown.type, unknown.status, unknown.reason) == (
        "AuditFactsReceived",
        "Unknown",
        "NoEditsJudged",
    )
    known["prod"] = RouteJoins("absent", "2026-12-06T05:00:00Z")
    stopped = facts_condition(prod, known.get)
    assert stopped is not None and (stopped.status, stopped.reason) == ("False", "NoAuditFacts")
    assert "2026-12-06T05:00:00Z" in stopped.message and "/audit-webhook/prod" in stopped.message
    known["prod"] = RouteJoins("joined", "2026-12-06T05:10:00Z")
    again = facts_condition(prod, known.get)
    assert again is not None and (again.status, again.reason) == ("True", "FactsJoined")
