"""What an acknowledged write costs when it waits for a replica (MIN_REPLICAS 0 and 1).

A primary and one replica of it, both ``redis-server`` with AOF and ``appendfsync always`` (what
the product needs of Redis: docs/architecture.md "Redis persistence"), on loopback. The two
acknowledged writes on the hot paths are timed with ``min_replicas`` 0 and 1, the sides taking
turns round by round so load from elsewhere on the machine falls on both alike:

- the watcher's publish of one API edit (``EventStream.publish``, one Lua call; with 1, a
  ``WAIT 1`` on the same connection), sequential, as the watcher publishes one event at a time;
- the receiver's store of one delivery (``NoticeWriter.store`` on the receiver's client: the
  notice and its replay guard in one Lua call, then the ``WAIT``).

Then the same pair end to end (``bench.replicas_e2e``): API edits mirrored per second and the
receiver's latency with every product process running, MIN_REPLICAS 0 beside 1.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench import replicas_e2e
from bench.report import Section, percentile
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.model.notices import PushNotice
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from shared.store.receivers import receiver_client
from shared.store.streams import EventStream
from tests.integration.redis_group import wait_for
from tests.integration.redis_server import RedisServer

ROUNDS = 5
#: Writes of each kind per side and round.
PER_ROUND = 400
BK = BranchKey("bench-replicas")


def _event(i: int) -> ObjectEvent:
    return ObjectEvent(
        target=GitTargetRef(GitTargetUid("uid-bench"), "team", "gt"),
        operation="UPDATE",
        object_id=ObjectId("", "v1", "configmaps", "ConfigMap", "team", f"cm-{i % 50}"),
        uid=f"u-{i % 50}",
        resource_version=str(i),
        body={"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": str(i)}},
        managers=(),
        observed_at=float(i),
    )


def _notice(i: int) -> PushNotice:
    return PushNotice(
        "team/gp", "https://git.example/a.git", "refs/heads/main", "a" * 40, f"d-{i}", 0.0
    )


def bench() -> Section:
    section = Section(
        "Acknowledged writes with 0 and 1 replicas (GITOPS_REVERSER_REDIS_MIN_REPLICAS)",
        "scripts/with-redis .venv/bin/python -m bench replicas",
    )
    with tempfile.TemporaryDirectory() as tmp:
        primary = RedisServer(Path(tmp) / "primary", aof=True)
        replica = RedisServer(
            Path(tmp) / "replica", aof=True, extra=("--replicaof", "127.0.0.1", str(primary.port))
        )
        primary.start()
        replica.start()
        try:
            probe = replica.client()
            wait_for(
                "the replica linked",
                lambda: probe.info("replication").get("master_link_status") == "up",
            )
            _measure(section, primary.url)
            replicas_e2e.measure(section, primary.url)
        finally:
            replica.stop()
            primary.stop()
    section.notes.append(
        "A primary and one replica on this machine's loopback, both with AOF and appendfsync "
        f"always; {ROUNDS} rounds of {PER_ROUND} writes per side, the sides (0 and 1 replica) "
        "taking turns. With 1, each write is followed by WAIT 1 on the connection that made it "
        "(shared.store.durable): the write's round trip, then the replica's receipt of it "
        "(its own append and fsync included) before the answer. A replica on another machine "
        "adds that network's round trip. The figures are store-level (one process, "
        "sequential writes): the watcher publishes and the receiver stores one at a time per "
        "thread, so the latency per write is what each pays."
    )
    return section


def _measure(section: Section, url: str) -> None:
    samples: dict[tuple[str, int], list[float]] = {}
    elapsed: dict[tuple[str, int], float] = {}
    counter = 0
    for _ in range(ROUNDS):
        for replicas in (0, 1):
            stream = EventStream(
                connect(url, client_name="bench", min_replicas=replicas), Keys(f"b{replicas}")
            )
            writer = NoticeWriter(receiver_client(url, min_replicas=replicas), Keys(f"b{replicas}"))
            for kind in ("publish", "store"):
                times = samples.setdefault((kind, replicas), [])
                began = time.perf_counter()
                for _ in range(PER_ROUND):
                    counter += 1
                    start = time.perf_counter()
                    if kind == "publish":
                        stream.publish(BK, _event(counter))
                    else:
                        writer.store("team/gp", f"d-{counter}", [_notice(counter)])
                    times.append((time.perf_counter() - start) * 1000)
                key = (kind, replicas)
                elapsed[key] = elapsed.get(key, 0.0) + time.perf_counter() - began
    for kind, label, unit in (
        ("publish", "watcher publish of an edit", "edits/s"),
        ("store", "receiver store of a delivery", "deliveries/s"),
    ):
        for replicas in (0, 1):
            key = (kind, replicas)
            rate = len(samples[key]) / elapsed[key]
            section.add(
                f"{label}, {replicas} replica(s): rate",
                round(rate),
                unit,
                "sequential, one connection",
            )
            section.add(f"{label}, {replicas} replica(s): p50", percentile(samples[key], 50), "ms")
            section.add(f"{label}, {replicas} replica(s): p99", percentile(samples[key], 99), "ms")
        slower = percentile(samples[(kind, 1)], 50) / percentile(samples[(kind, 0)], 50)
        section.add(f"{label}: p50 with 1 replica / with 0", round(slower, 2), "")
