"""The worker's threads (Q1): a heartbeat that renews leases whatever the branches' work does,
a bounded pool that works branches side by side (each branch serially), a capacity, and the
retirement of branches no GitTarget writes to any more.

Pushes are held up with a ``threading.Event`` the test controls (``GatedWorkspace``), never
with sleeps; waits across threads poll a condition under a deadline (``wait_until``).
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from services.branch_worker.orphans import GRACE_S as ORPHAN_GRACE_S
from shared.model.ids import BranchKey
from shared.store.keys import Keys
from tests.helpers import wait_until
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import DEADLINE_S, Gates, Running, Site, settings_for

pytestmark = pytest.mark.integration


def test_a_slow_push_does_not_stop_lease_renewal_nor_the_other_branches(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str, gates: Gates
) -> None:
    """Q1: while one branch's push hangs for several lease periods, the heartbeat renews its
    lease (same holder, same token) and another branch is pushed meanwhile."""
    settings = settings_for(tmp_path, key_prefix, lease_period=timedelta(milliseconds=600))
    site = Site(tmp_path, redis_client, key_prefix, settings)
    slow, quick = site.branch("slow"), site.branch("quick")
    gates.held.add("slow.git")
    site.edit("slow", "a")
    with Running(site.worker("w", time.time, gates)) as worker:
        wait_until(lambda: "slow.git" in gates.entered, DEADLINE_S, "the slow push to start")
        holder = site.stores.leases.holder(slow)
        beats = worker.heartbeat.beats
        wait_until(
            lambda: worker.heartbeat.beats >= beats + 4, DEADLINE_S, "four beats (> a lease)"
        )
        assert site.stores.leases.holder(slow) == holder, "renewed, never lost nor retaken"
        assert holder is not None and holder.startswith("w|")
        site.edit("quick", "b")
        wait_until(lambda: site.pushed("quick") != [], DEADLINE_S, "the quick branch's push")
        assert site.pushed("slow") == [], "the slow push is still held"
        gates.release.set()
        wait_until(lambda: site.stores.events.pending_count(slow) == 0, DEADLINE_S, "the slow push")
    assert site.pushed("slow") == ["[CREATE] v1/configmaps/a"]
    assert site.pushed("quick") == ["[CREATE] v1/configmaps/b"]
    assert site.stores.leases.holder(quick) is None, "given back at shutdown"


def test_the_pool_works_at_most_branch_threads_branches_at_once(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str, gates: Gates
) -> None:
    """Three branches with held pushes and two threads: two pushes wait, the third waits for
    a thread; each branch still gets its push once one is free."""
    settings = settings_for(tmp_path, key_prefix, branch_threads=2)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    names = ["p0", "p1", "p2"]
    for name in names:
        site.branch(name)
        site.edit(name, f"cm-{name}")
        gates.held.add(f"{name}.git")
    with Running(site.worker("w", time.time, gates)):
        wait_until(lambda: len(gates.entered) == 2, DEADLINE_S, "two pushes to start")
        assert gates.active == 2
        gates.release.set()
        wait_until(lambda: all(site.pushed(n) for n in names), DEADLINE_S, "every branch's push")
    assert gates.peak == 2, "never more pushes at once than threads"
    assert sorted(gates.entered) == [f"{n}.git" for n in names]


def test_a_worker_takes_its_share_capped_by_max_branches(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """Five branches, two live workers that can each serve two: each takes two, one is left
    for a third worker."""
    settings = settings_for(tmp_path, key_prefix, max_branches=2)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    for i in range(5):
        site.branch(f"c{i}")
    clock = Clock()
    first, second = site.worker("w1", clock), site.worker("w2", clock)
    try:
        first.heartbeat.beat()
        second.heartbeat.beat()
        for worker in (first, second):
            worker.wake()
            worker.settle()
        assert (len(first.loops), len(second.loops)) == (2, 2)
        bks = [bk for bk, _ in site.repos.values()]
        free = [bk for bk in bks if site.stores.leases.holder(bk) is None]
        assert len(free) == 1
    finally:
        first.shutdown()
        second.shutdown()


def test_a_worker_that_took_everything_gives_the_excess_to_a_sibling_that_joins(
    site: Site,
) -> None:
    """Q1: alone, a worker takes all four branches; once a sibling is alive it keeps its
    share (two), gives the idle rest back, and the sibling takes them."""
    for i in range(4):
        site.branch(f"s{i}")
    clock = Clock()
    first, second = site.worker("w1", clock), site.worker("w2", clock)
    try:
        first.heartbeat.beat()
        first.wake()
        first.settle()
        assert len(first.loops) == 4
        second.heartbeat.beat()
        clock.now += 1.0
        first.wake()
        first.settle()
        second.wake()
        second.settle()
        assert (len(first.loops), len(second.loops)) == (2, 2)
        assert set(first.loops).isdisjoint(second.loops)
    finally:
        first.shutdown()
        second.shutdown()


def test_a_lease_the_heartbeat_finds_lost_drops_the_branch_and_acks_nothing(
    site: Site,
) -> None:
    bk = site.branch("lost")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        worker.wake()
        worker.settle()
        assert bk in worker.loops
        site.client.delete(Keys(site.prefix).branch_lease(bk))  # expired while paused
        taker = site.stores.leases.acquire(bk, "w2")
        assert taker is not None
        site.edit("lost", "after")
        worker.heartbeat.beat()
        assert worker.held.is_lost(bk)
        clock.now += 1.0
        worker.wake()
        worker.settle()
        assert bk not in worker.loops, "dropped before any more work"
        assert site.stores.events.pending_count(bk) == 1, "the edit waits for the new owner"
        assert site.pushed("lost") == []
    finally:
        worker.shutdown()
    assert site.stores.leases.holder(bk) == taker.value, "shutdown released nothing of w2's"


def _keys_of(site: Site, bk: BranchKey) -> list[str]:
    return sorted(str(k) for k in site.client.scan_iter(f"{site.prefix}:branch:{bk}:*"))


def test_a_branch_whose_targets_are_all_gone_is_retired_after_the_grace(site: Site) -> None:
    bk = site.branch("orphan")
    _, uid = site.repos["orphan"]
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        worker.wake()
        worker.settle()
        assert bk in worker.loops
        workdir = worker.loops[bk].ws.directory
        config = site.stores.configs.target(uid)
        assert config is not None
        site.edit("orphan", "late")  # an event of the GitTarget, left as it is deleted
        site.stores.configs.forget_target(config)
        for step in (0.0, ORPHAN_GRACE_S / 2, ORPHAN_GRACE_S / 2):
            clock.now += step
            assert bk in worker.loops, "kept during the grace"
            worker.wake()
            worker.settle()
        assert bk not in worker.loops
        assert bk not in site.stores.registry.branches()
        assert _keys_of(site, bk) == [f"{site.prefix}:branch:{bk}:fence"]
        assert not workdir.exists()
        clock.now += 5.0
        worker.wake()
        worker.settle()
        assert bk not in worker.loops, "never leased again"
    finally:
        worker.shutdown()
    assert site.pushed("orphan") == [], "the gone GitTarget's event was not written"


def test_a_branch_with_a_live_target_is_never_retired(site: Site) -> None:
    bk = site.branch("kept")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        worker.wake()
        worker.settle()
        for _ in range(3):
            clock.now += ORPHAN_GRACE_S
            worker.wake()
            worker.settle()
        assert bk in worker.loops, "its GitTarget still writes to it"
        assert site.stores.configs.branch(bk) is not None
    finally:
        worker.shutdown()


def test_events_of_a_withdrawn_target_are_dropped_unwritten(site: Site) -> None:
    """A GitTarget that became invalid is withdrawn by the watcher; its events still in the
    stream are acknowledged without a write."""
    bk = site.branch("withdrawn")
    _, uid = site.repos["withdrawn"]
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        worker.wake()
        worker.settle()
        assert site.stores.configs.withdraw_target(uid)
        site.edit("withdrawn", "while-invalid")
        clock.now += 1.0
        worker.wake()
        worker.settle()
        assert site.stores.events.pending_count(bk) == 0
    finally:
        worker.shutdown()
    assert site.pushed("withdrawn") == []
