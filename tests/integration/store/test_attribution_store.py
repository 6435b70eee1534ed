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


def test_streams_are_trimmed_to_the_ttl_horizon_at_most_once_a_minute(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """Facts §4: ``XTRIM MINID`` to the TTL horizon at most once a minute: a stream that keeps
    being appended to (so never expires) loses its entries older than the TTL."""
    keys = Keys(key_prefix)
    now = [0.0]
    streams = FactStreams(redis_client, keys, ttl_s=60, clock=lambda: now[0])
    key = keys.audit_facts("r", "configmaps")
    redis_client.xadd(key, {"facts": "[]"}, id="1-0")  # an entry from long ago
    redis_client.xadd(key, {"facts": "[]"}, id="2-0")

    def trims() -> int:
        stats = redis_client.info("commandstats").get("cmdstat_xtrim", {})
        return int(stats.get("calls", 0)) if isinstance(stats, dict) else 0

    before = trims()
    streams.append("r", {"configmaps": [_fact(1)]})
    facts, _, _ = streams.read_after("r", "configmaps", "0")
    assert [f.uid for f in facts] == ["u1"]  # the old entries are gone, the new one kept
    assert trims() == before + 1
    redis_client.xadd(key, {"facts": "[]"}, id="*")
    now[0] += 59.0
    streams.append("r", {"configmaps": [_fact(2)]})
    assert trims() == before + 1  # not again within the minute
    now[0] += 1.0
    streams.append("r", {"configmaps": [_fact(3)]})
    assert trims() == before + 2
    assert redis_client.xlen(key) == 4  # nothing fresh was trimmed
