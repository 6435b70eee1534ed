"""A cursor Redis lost stays lost until a list writes it anew (D2): moving a cursor after an
event, or a shared watch's cursors at a bookmark, never writes one back, so the channel's next
start still sees the loss and lists again."""

from __future__ import annotations

import redis

from shared.model.ids import GitTargetUid
from shared.store.keys import Keys
from shared.store.watches import KnownObject, WatchAddress, WatchState

SEEN = {"app": KnownObject("uid-1", "ConfigMap", "v1", "12")}


def _state(redis_client: redis.Redis, key_prefix: str) -> WatchState:
    return WatchState(redis_client, Keys(key_prefix))


def test_moving_a_lost_cursor_does_not_write_it_back(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    watches = _state(redis_client, key_prefix)
    kept = WatchAddress(GitTargetUid("t1"), "/configmaps", "team-a")
    lost = WatchAddress(GitTargetUid("t1"), "/configmaps", "team-b")
    for at in (kept, lost):
        watches.replace(at, "10", SEEN)
    redis_client.delete(watches._cursor_key(lost))  # Redis lost it (flushed, restarted empty)

    watches.advance(lost, "20", seen=SEEN)
    watches.advance_many([kept, lost], "30")

    assert watches.cursors_many([kept, lost]) == ["30", None]


def test_a_list_writes_a_lost_cursor_anew(redis_client: redis.Redis, key_prefix: str) -> None:
    watches = _state(redis_client, key_prefix)
    at = WatchAddress(GitTargetUid("t1"), "/configmaps", "team-a")
    watches.replace(at, "10", SEEN)
    redis_client.delete(watches._cursor_key(at))
    watches.advance(at, "20")
    assert watches.cursor(at) is None
    watches.replace(at, "25", SEEN)
    watches.advance(at, "26")
    assert watches.cursor(at) == "26"
