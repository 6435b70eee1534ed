"""Attribution facts and audit routes in a real Redis (facts: upstream-gitops-reverser.md §4:
one stream per route and group/resource, MAXLEN ~, EXPIRE refreshed on every append)."""

from __future__ import annotations

import pytest
import redis

from shared.model.attribution import AuthorFact
from shared.store.attribution import AuditRoute, AuditRoutes, FactStreams
from shared.store.keys import Keys

pytestmark = pytest.mark.integration


def _fact(i: int) -> AuthorFact:
    return AuthorFact("alice", "update", "", "configmaps", "t", f"x{i}", f"u{i}", str(i), "a", "t")


def test_facts_are_read_after_the_last_id_and_expire(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    streams = FactStreams(redis_client, keys, ttl_s=60)
    assert streams.append("r:1", {"configmaps": [_fact(1), _fact(2)]}) == 2
    facts, last, bad = streams.read_after("r:1", "configmaps", "0")
    assert [f.uid for f in facts] == ["u1", "u2"] and bad == 0
    streams.append("r:1", {"configmaps": [_fact(3)], "apps/deployments": [_fact(4)]})
    redis_client.xadd(keys.audit_facts("r:1", "configmaps"), {"facts": "not json"})
    more, _, bad = streams.read_after("r:1", "configmaps", last)
    assert [f.uid for f in more] == ["u3"] and bad == 1
    key = keys.audit_facts("r:1", "configmaps")
    assert "r%3A1" in key  # ':' in a key field is escaped
    assert 0 < redis_client.ttl(key) <= 60


def test_routes_are_published_exactly(redis_client: redis.Redis, key_prefix: str) -> None:
    routes = AuditRoutes(redis_client, Keys(key_prefix))
    routes.publish({"a": AuditRoute("a", "pa", "s", "token"), "b": AuditRoute("b", "pb", "s", "t")})
    routes.publish({"b": AuditRoute("b", "pb", "s2", "t")})
    assert routes.lookup("a") is None
    assert routes.lookup("b") == AuditRoute("b", "pb", "s2", "t")
