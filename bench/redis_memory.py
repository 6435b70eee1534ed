"""Redis memory per idle branch, for 100 and 1,000 branches.

An idle branch keeps its settings, one GitTarget's settings, its published state, an empty
events stream with its consumer group, a lease and a fencing counter. The benchmark builds
that for N branches under a fresh key prefix and reads ``used_memory`` before and after.
"""

from __future__ import annotations

import uuid

import redis

from bench.report import Section
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from shared.settings import Settings
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.streams import EventStream
from tests.configs import branch_config, target_config

SIZES = (100, 1000)


def _idle_branch(client: redis.Redis, keys: Keys, i: int) -> None:
    url = f"https://git.example.com/team/repo-{i:05d}.git"
    configs = ConfigStore(client, keys)
    bk = configs.publish_branch(branch_config(url, "main", "team", f"gp-{i}"))
    uid = GitTargetUid(str(uuid.UUID(int=i)))
    configs.publish_target(target_config(uid, "team", f"gt-{i}", url, "main", path="clusters/prod"))
    lease = Leases(client, keys, 15_000).acquire(bk, "worker-0")
    assert lease is not None
    events = EventStream(client, keys)
    events.ensure_group(bk)
    oid = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "x")
    events.publish(
        bk, ObjectEvent(GitTargetRef(uid, "team", "gt"), "CREATE", oid, "u", "1", {}, (), 0.0)
    )
    events.ack(bk, events.read(bk, "worker-0", 1, None))
    states = BranchStates(client, keys)
    states.publish_tip(lease, "a" * 40)
    states.remember_ours(lease, "b" * 40, ())
    states.publish_tip(lease, "a" * 40)
    states.publish_counts(lease, windows_open=0, pending=0, last_write_at=1.0e9)
    states.publish_push(lease, in_flight=False)


def _fill(client: redis.Redis, keys: Keys, size: int) -> None:
    for i in range(size):
        _idle_branch(client, keys, i)


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def bench() -> Section:
    """Measure bytes per idle branch."""
    client = connect(Settings.from_env().redis_url, client_name="bench")
    section = Section("Redis memory per idle branch", "make bench  (python -m bench redis_memory)")
    _fill(client, Keys(f"bench-warmup:{uuid.uuid4().hex[:8]}"), 10)  # scripts, dict growth
    for size in SIZES:
        keys = Keys(f"bench:{uuid.uuid4().hex[:8]}")
        before = _used(client)
        _fill(client, keys, size)
        after = _used(client)
        section.add(
            f"{size} idle branches",
            (after - before) / size,
            "bytes/branch",
            "used_memory delta / N",
        )
    for stale in (client.scan_iter("bench*"),):
        names = list(stale)
        for start in range(0, len(names), 500):
            client.delete(*names[start : start + 500])
    section.notes.append(
        "Per branch: settings, one GitTarget's settings, the state hash, an "
        "empty events stream with its group, the lease and the fence counter."
    )
    return section
