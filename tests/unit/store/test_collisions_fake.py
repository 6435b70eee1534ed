"""W3: a branch keeps its latest apply-window collisions for ``inspect`` (fakeredis)."""

from __future__ import annotations

import fakeredis

from shared.model.ids import BranchKey
from shared.store.collisions import KEEP, TTL_S, Collision, Collisions
from shared.store.keys import Keys

BK = BranchKey("bk-1")


def collision(at: float, outcome: str = "withheld") -> Collision:
    return Collision(at, outcome, "ConfigMap/team/app", "team/gt", "Kustomization/f/ks", "why")


def test_the_latest_collisions_are_kept_newest_first_capped_and_expiring() -> None:
    """W3: newest first, at most KEEP, gone a day after the last one."""
    client = fakeredis.FakeRedis(decode_responses=True)
    keys = Keys("test")
    store = Collisions(client, keys)
    for i in range(KEEP + 5):
        store.record(BK, collision(float(i), "ambiguous" if i % 2 else "withheld"))
    kept = store.latest(BK)
    assert [c.at for c in kept] == [float(i) for i in reversed(range(5, KEEP + 5))]
    assert kept[0] == collision(float(KEEP + 4), "withheld" if (KEEP + 4) % 2 == 0 else "ambiguous")
    assert 0 < client.ttl(keys.branch_collisions(BK)) <= TTL_S
    assert Collisions(client, keys).latest(BranchKey("other")) == []


def test_a_malformed_entry_is_skipped() -> None:
    """A list entry no ``Collision.to_json`` wrote is left out, not an error."""
    client = fakeredis.FakeRedis(decode_responses=True)
    keys = Keys("test")
    client.lpush(keys.branch_collisions(BK), "{not json")
    Collisions(client, keys).record(BK, collision(1.0))
    assert [c.at for c in Collisions(client, keys).latest(BK)] == [1.0]
