"""``POST /audit-webhook/<route>`` (P5): bearer token per route, body cap, the accept gate, facts
stored once per group/resource, metrics; bad input is a 4xx, never a 500.

Facts: upstream-gitops-reverser.md §1.4 (ingress per route, accept gate, one append per
(route, group/resource) per request), §4 (fact streams), §5.1 (``audit_*`` counters).
"""

from __future__ import annotations

import json
from typing import Any

from shared.model.attribution import facts_from_json
from shared.store.attribution import AuditRoute, AuditRoutes
from tests.unit.receiver.rig import LIMIT, Rig, answer, make_rig

TOKEN = b"route-token"


def _rig() -> Rig:
    rig = make_rig()
    AuditRoutes(rig.redis, rig.keys).publish(
        {"prod": AuditRoute("prod", "prod", "audit-tok", "token")}
    )
    rig.secrets.values[("gitops-reverser", "audit-tok", "token")] = TOKEN
    return rig


def _event(verb: str = "update", **over: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "stage": "ResponseComplete",
        "verb": verb,
        "auditID": "a1",
        "requestURI": "/api/v1/namespaces/team/configmaps/x",
        "user": {"username": "alice", "extra": {"configbutler.ai/claims/email": ["a@x.org"]}},
        "objectRef": {
            "resource": "configmaps",
            "apiGroup": "",
            "apiVersion": "v1",
            "namespace": "team",
            "name": "x",
            "uid": "u1",
            "resourceVersion": "7",
        },
        "responseStatus": {"code": 200},
        "stageTimestamp": "2026-01-01T00:00:00.000000Z",
    }
    event.update(over)
    return event


def _post(
    rig: Rig, items: Any, token: bytes = TOKEN, route: str = "prod", raw: bytes | None = None
):  # type: ignore[no-untyped-def]
    body = raw if raw is not None else json.dumps({"kind": "EventList", "items": items}).encode()
    return rig.client.post(
        f"/audit-webhook/{route}",
        data=body,
        headers={"Authorization": f"Bearer {token.decode()}", "Content-Type": "application/json"},
    )


def _entries(rig: Rig, gr: str) -> list[Any]:
    return rig.redis.xrange(rig.keys.audit_facts("prod", gr))


def test_accepted_events_are_one_entry_per_group_resource() -> None:
    rig = _rig()
    deploy = _event("patch", objectRef={"resource": "deployments", "apiGroup": "apps", "uid": "d"})
    response = _post(rig, [_event(), _event("create"), deploy, _event(stage="RequestReceived")])
    assert answer(response) == (200, "stored")
    cms = _entries(rig, "configmaps")
    assert len(cms) == 1  # one append for two configmap facts
    facts = facts_from_json(cms[0][1]["facts"])
    assert [(f.verb, f.author, f.email, f.uid, f.resource_version) for f in facts] == [
        ("update", "alice", "a@x.org", "u1", "7"),
        ("create", "alice", "a@x.org", "u1", "7"),
    ]
    assert len(_entries(rig, "apps/deployments")) == 1
    assert rig.redis.ttl(rig.keys.audit_facts("prod", "configmaps")) > 0  # bounded in age
    sample = rig.registry.get_sample_value
    assert sample("gitops_reverser_audit_eventlists_total", {"outcome": "processed"}) == 1
    dropped = {"outcome": "stage", "category": "dropped", "group": "", "version": "",
               "resource": "", "verb": "update"}  # fmt: skip
    assert sample("gitops_reverser_audit_events_total", dropped) == 1


def test_a_wrong_or_missing_token_is_401_and_stores_nothing() -> None:
    rig = _rig()
    assert answer(_post(rig, [_event()], token=b"nope")) == (401, "unauthorized")
    response = rig.client.post("/audit-webhook/prod", data=b"{}")
    assert answer(response) == (401, "unauthorized")
    assert _entries(rig, "configmaps") == []


def test_an_unknown_route_is_404() -> None:
    rig = _rig()
    assert answer(_post(rig, [_event()], route="other")) == (404, "not_found")
    assert answer(_post(rig, [_event()], route="Bad_Route")) == (404, "not_found")


def test_malformed_bodies_are_400_and_an_oversized_one_413() -> None:
    rig = _rig()
    for raw in (b"not json", b"[]", b'{"kind": "Pod"}', b'{"kind": "EventList", "items": 3}'):
        assert answer(_post(rig, None, raw=raw)) == (400, "malformed"), raw
    assert answer(_post(rig, None, raw=b"x" * (LIMIT + 1)))[0] == 413
    garbage = [None, 3, "x", {"stage": "ResponseComplete"}, {"verb": ["x"]}]
    assert answer(_post(rig, garbage)) == (200, "stored")  # every item dropped, no 500


def test_an_unreadable_secret_is_503() -> None:
    from services.receiver.secrets import SecretUnavailable

    rig = _rig()
    rig.secrets.failure = SecretUnavailable("api down")
    assert answer(_post(rig, [_event()])) == (503, "unavailable")


def test_a_missing_secret_or_key_is_503_whatever_the_token() -> None:
    """The route's Secret is our configuration, not the caller's: while it is missing, or has
    no (or an empty) token key, the route is answered 503 (the API server retries) and not
    401, and the watcher shows why on the ClusterProvider (AttributionConfigured=False)."""
    rig = _rig()
    del rig.secrets.values[("gitops-reverser", "audit-tok", "token")]
    assert answer(_post(rig, [_event()])) == (503, "unavailable")
    rig2 = _rig()
    rig2.secrets.values[("gitops-reverser", "audit-tok", "token")] = b"  \n"
    assert answer(_post(rig2, [_event()], token=b"")) == (503, "unavailable")
    assert _entries(rig, "configmaps") == [] and _entries(rig2, "configmaps") == []


def _series(rig: Rig) -> int:
    return sum(
        1
        for family in rig.registry.collect()
        if family.name == "gitops_reverser_audit_events"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


def test_events_naming_made_up_types_add_a_bounded_number_of_series() -> None:
    """N9: 1,000 failed writes to made-up resources (what any user's POST to one makes the API
    server send), and 1,000 accepted events of made-up types (a token holder writing what it
    likes), each with a made-up verb too: the counter's series stay bounded."""
    rig = _rig()
    assert answer(_post(rig, [_event()])) == (200, "stored")
    before = _series(rig)
    refused = [
        _event(
            "create",
            responseStatus={"code": 404},
            objectRef={"apiGroup": "evil.example", "apiVersion": f"v{n}", "resource": f"r{n}"},
        )
        for n in range(1000)
    ] + [_event(f"verb{n}", objectRef={"resource": f"r{n}"}) for n in range(1000)]
    accepted = [
        _event(objectRef={"apiGroup": f"g{n}.example", "resource": f"r{n}", "uid": f"u{n}"})
        for n in range(1000)
    ]
    for chunk in range(0, len(refused + accepted), 50):
        assert answer(_post(rig, (refused + accepted)[chunk : chunk + 50])) == (200, "stored")
    grown = _series(rig) - before
    assert grown <= 512 + 3  # accepted types up to the cap (512), other, 2 dropped series
    from services.receiver.audit import AuditMetrics

    assert AuditMetrics.MAX_TYPE_LABELS == 512
    sample = rig.registry.get_sample_value
    failed = {"outcome": "failed_request", "category": "dropped", "group": "", "version": "",
              "resource": "", "verb": "create"}  # fmt: skip
    assert sample("gitops_reverser_audit_events_total", failed) == 1000
    unknown = dict(failed, outcome="read_only_or_unknown_verb", verb="other")
    assert sample("gitops_reverser_audit_events_total", unknown) == 1000
    beyond = {"outcome": "queued", "category": "stored", "group": "other", "version": "other",
              "resource": "other", "verb": "update"}  # fmt: skip
    assert sample("gitops_reverser_audit_events_total", beyond) == 1000 - (
        AuditMetrics.MAX_TYPE_LABELS - 1
    )
