"""``WatchState.revisions_many``, the D3 check's read of what each watch knows: the same
(uid, resourceVersion) pairs ``known_many`` gives, decoded in one pass per watch."""

from __future__ import annotations

import redis

from shared.model.ids import GitTargetUid
from shared.store.keys import Keys
from shared.store.watches import KnownObject, WatchAddress, WatchState


def test_revisions_are_the_known_objects_uid_and_resource_version(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    watches = WatchState(redis_client, keys)
    full = WatchAddress(GitTargetUid("t1"), "/configmaps", "team")
    empty = WatchAddress(GitTargetUid("t1"), "/secrets", "team")
    objects = {
        f"cm-{i}": KnownObject(f"uid-{i}", "ConfigMap", "v1", str(100 + i)) for i in range(50)
    }
    watches.replace(full, "150", objects)
    # a record of an older version: three fields, no resourceVersion (never "unchanged")
    redis_client.hset(watches._known_key(full), "old", '["uid-old", "ConfigMap", "v1"]')
    found = watches.revisions_many([full, empty])
    expected = {n: (k.uid, k.resource_version) for n, k in watches.known_many([full])[0].items()}
    assert found == [expected, {}]
    assert found[0]["cm-7"] == ("uid-7", "107")
    assert found[0]["old"] == ("uid-old", "")
    assert watches.revisions_many([]) == []
