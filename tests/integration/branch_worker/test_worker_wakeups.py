"""What wakes an owned branch (Q1, Q5, Q7, A4): new events, a notice, an apply outcome, or a
deadline (the steady tick); an idle branch costs the worker no Redis command of its own, so an
idle worker's cost grows with its rounds, not with its branches times its rounds. Also: a
branch listed without settings is retired after the grace, and the pool's gauges.

Time is the test's clock (``Clock``); commands are counted on the worker's own connections.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from prometheus_client import REGISTRY

from sandbox.githost.outside import push
from services.branch_worker.orphans import CHECK_EVERY_S, GRACE_S
from services.branch_worker.pacing import HINTS_FALLBACK_S
from services.branch_worker.taking import ACQUIRE_EVERY_S
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import Branch, GitTargetUid, ObjectId
from shared.model.notices import PushNotice
from shared.model.requests import AttemptOutcome
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from tests.configs import target_config
from tests.helpers import wait_until
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import DEADLINE_S, Gates, Running, Site, settings_for
from tests.integration.counting import counting_client

pytestmark = pytest.mark.integration

#: Commands one scheduling round may send whatever the number of idle branches: the share
#: (ZCOUNT, SMEMBERS; at most once per ACQUIRE_EVERY_S) and the blocking read of the events
#: and the doorbell (XREADGROUP); notices and outcomes (XREAD each) only when the doorbell
#: rang or every HINTS_FALLBACK_S.
PER_ROUND = 3


def _take_all(worker: BranchWorker, clock: Clock, count: int) -> None:
    """Wake until the worker owns ``count`` branches and each had its first pass."""
    for _ in range(10):
        worker.wake()
        worker.settle()
        clock.now += ACQUIRE_EVERY_S
        if len(worker.loops) == count:
            break
    worker.wake()  # the first pass of every branch
    worker.settle()
    assert len(worker.loops) == count


def test_idle_branches_cost_no_command_of_their_own(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """Twelve idle branches over ten one-second rounds: only the per-round reads and the
    orphan check reach Redis; no pass runs, so no state is published, no settings or outcomes
    are read per branch. The orphan check is one read of the targets' counter every
    CHECK_EVERY_S once it has seen every branch with a GitTarget (at most one full look, one
    SCARD per branch); a GitTarget leaving any branch makes the next check look again."""
    branches = 12
    settings = settings_for(tmp_path, key_prefix)
    counts: Counter[str] = Counter()
    client = counting_client(settings.redis_url, counts)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    for i in range(branches):
        site.branch(f"idle{i}")
    clock = Clock()
    worker = BranchWorker(settings, Stores.build(client, settings), "w1", clock)

    def idle_rounds(rounds: int) -> None:
        for _ in range(rounds):
            clock.now += 1.0
            worker.wake()
            worker.settle()

    try:
        _take_all(worker, clock, branches)
        idle_rounds(int(CHECK_EVERY_S) + 1)  # a full look at every idle branch
        counts.clear()
        rounds = 10
        assert settings.steady_tick.total_seconds() > 2 * rounds, "no steady tick falls due"
        idle_rounds(rounds)
        checks = int(rounds / CHECK_EVERY_S)
        fallbacks = int(rounds / HINTS_FALLBACK_S)
        assert sum(counts.values()) <= rounds * PER_ROUND + checks + 2 * fallbacks, counts
        assert set(counts) <= {"ZCOUNT", "SMEMBERS", "XREAD", "XREADGROUP", "GET"}, counts
        assert counts["GET"] == checks, "one read of the counter per orphan check"
        assert counts["XREADGROUP"] == rounds, "one event read per round, for all branches"
        assert counts["XREAD"] == 2 * fallbacks, "no ring: notices and outcomes on the fallback"
        site.stores.configs.withdraw_target(site.repos["idle0"][1])  # leaves its branch
        counts.clear()
        idle_rounds(int(CHECK_EVERY_S))
        assert counts["SCARD"] == branches, "the counter moved: every idle branch looked at"
    finally:
        worker.shutdown()
        client.close()


def test_branches_a_sibling_holds_cost_no_command_of_their_own_when_taking(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """A worker with room looks for branches to take every round: the leases of all the
    branches it does not hold are read in one MGET, and a held one is not tried (its
    settings and GitTargets were read and its lease tried, three commands a branch a round)."""
    branches = 12
    settings = settings_for(tmp_path, key_prefix)
    counts: Counter[str] = Counter()
    client = counting_client(settings.redis_url, counts)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    keys = [site.branch(f"held{i}") for i in range(branches)]
    for bk in keys:
        assert site.stores.leases.acquire(bk, "sibling") is not None
    clock = Clock()
    worker = BranchWorker(settings, Stores.build(client, settings), "w1", clock)
    try:
        worker.wake()
        worker.settle()
        counts.clear()
        clock.now += ACQUIRE_EVERY_S
        worker.taking.acquire_if_due()
        assert worker.loops == {}, "every branch is held"
        assert counts == Counter({"ZCOUNT": 1, "SMEMBERS": 1, "MGET": 1}), counts
    finally:
        worker.shutdown()
        client.close()


def test_an_idle_branch_reads_its_tip_on_the_steady_tick(site: Site) -> None:
    """Q7: with nothing arriving, the branch is passed when its steady tick comes, and not
    before."""
    bk = site.branch("ticking")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        taken_at = clock.now
        for _ in range(2):  # taken, then its first pass, at one instant
            worker.wake()
            worker.settle()
        assert bk in worker.loops
        assert site.stores.states.read(bk).tip_read_at is None, "start fetches, never ls-remote"
        clock.now = taken_at + site.settings.steady_tick.total_seconds() - 1.0
        worker.wake()
        worker.settle()
        assert site.stores.states.read(bk).tip_read_at is None, "not due yet"
        clock.now += 1.0
        worker.wake()
        worker.settle()
        assert site.stores.states.read(bk).tip_read_at == clock.now
    finally:
        worker.shutdown()


def test_an_idle_branch_spends_its_tick_unread_while_its_receiver_delivers(site: Site) -> None:
    """P14 through the worker: the branch's GitProvider's receiver delivered (a ping, say),
    so the steady tick reads no tip until the trust age has passed since that delivery."""
    bk = site.branch("trusted")
    clock = Clock()
    NoticeWriter(site.client, Keys(site.prefix), clock=lambda: clock.now).delivered(
        site.stores.configs.branch(bk).url  # type: ignore[union-attr]
    )
    worker = site.worker("w1", clock)
    tick = site.settings.steady_tick.total_seconds()
    age = site.settings.remote_trust_max_age.total_seconds()
    try:
        delivered_at = clock.now
        for _ in range(2):  # taken, then its first pass
            worker.wake()
            worker.settle()
        assert bk in worker.loops
        while clock.now + tick < delivered_at + age:
            clock.now += tick
            worker.wake()
            worker.settle()
            assert site.stores.states.read(bk).tip_read_at is None, "trusted: no ls-remote"
        clock.now = delivered_at + age
        worker.wake()
        worker.settle()
        assert site.stores.states.read(bk).tip_read_at == clock.now, "the age is over: read"
    finally:
        worker.shutdown()


def test_a_notice_wakes_an_idle_branch(site: Site, tmp_path: Path) -> None:
    """Q5: a notice for an idle branch gets it a pass, which reads the tip and records the
    foreign commit, long before its steady tick."""
    bk = site.branch("noticed")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        _take_all(worker, clock, 1)
        bare = tmp_path / "noticed.git"
        sha = push(str(bare), tmp_path / "other", {"notes.md": "someone\n"}, "foreign")
        notice = PushNotice("team/gp-noticed", str(bare), "refs/heads/main", sha, "d-1", 0.0)
        assert Branch(str(bare), "main").key == bk
        NoticeWriter(site.client, Keys(site.prefix)).store("team/gp-noticed", "d-1", [notice])
        clock.now += 1.0
        worker.wake()
        worker.settle()
        state = site.stores.states.read(bk)
        assert (state.observed_tip, state.foreign_tip) == (sha, sha)
    finally:
        worker.shutdown()


def test_a_notice_rings_its_owner_at_once_without_a_poll(site: Site, tmp_path: Path) -> None:
    """Q5 through the doorbell: the clock stands still, so no read of notices falls due (the
    fallback's ``HINTS_FALLBACK_S``); the stored notice rings its owner's doorbell, the one
    group read returns with it, and the same round reads the notice and passes the branch."""
    bk = site.branch("rung")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        _take_all(worker, clock, 1)
        sha = push(str(tmp_path / "rung.git"), tmp_path / "other", {"n.md": "x\n"}, "foreign")
        notice = PushNotice(
            "team/gp-rung", str(tmp_path / "rung.git"), "refs/heads/main", sha, "d-1", 0.0
        )
        NoticeWriter(site.client, Keys(site.prefix)).store("team/gp-rung", "d-1", [notice])
        worker.wake()
        worker.settle()
        state = site.stores.states.read(bk)
        assert (state.observed_tip, state.foreign_tip) == (sha, sha)
    finally:
        worker.shutdown()


def test_a_notice_whose_ring_is_lost_waits_for_the_fallback(site: Site, tmp_path: Path) -> None:
    """The counterpart: a notice appended without a ring (as if the ring were lost) is not
    read while the clock stands still, and is read once ``HINTS_FALLBACK_S`` has passed."""
    bk = site.branch("unrung")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        _take_all(worker, clock, 1)
        sha = push(str(tmp_path / "unrung.git"), tmp_path / "other", {"n.md": "x\n"}, "foreign")
        notice = PushNotice(
            "team/gp", str(tmp_path / "unrung.git"), "refs/heads/main", sha, "", 0.0
        )
        site.client.xadd(Keys(site.prefix).branch_notices(bk), notice.to_fields())  # type: ignore[arg-type]
        worker.wake()
        worker.settle()
        assert site.stores.states.read(bk).foreign_tip is None, "no ring, no read yet"
        clock.now += HINTS_FALLBACK_S
        worker.wake()
        worker.settle()
        assert site.stores.states.read(bk).foreign_tip == sha
    finally:
        worker.shutdown()


def test_an_apply_outcome_wakes_an_idle_branch(site: Site) -> None:
    """A4: an outcome on the branch's stream gets the branch a pass, whose desk consumes it."""
    bk = site.branch("outcome")
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        _take_all(worker, clock, 1)
        site.stores.attempts.report(bk, AttemptOutcome("token-1", "Delivered"))
        assert len(site.stores.attempts.outcomes(bk)) == 1
        clock.now += 1.0
        worker.wake()
        worker.settle()
        assert site.stores.attempts.outcomes(bk) == []
    finally:
        worker.shutdown()


def test_a_branch_listed_without_settings_is_retired_after_the_grace(site: Site) -> None:
    """A branch in the list whose settings were never published (an event for it, nothing
    else) is neither worked nor kept for ever: once the grace is over it leaves the list and
    its keys go."""
    bare = "/nowhere/never.git"
    bk = Branch(bare, "main").key
    event = ObjectEvent(
        GitTargetRef(GitTargetUid("gt-gone"), "team", "gt"),
        "CREATE",
        ObjectId("", "v1", "configmaps", "ConfigMap", "team", "stray"),
        "uid-stray",
        "1",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray"}},
        (),
        0.0,
    )
    site.stores.events.publish(bk, event)
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        worker.wake()
        worker.settle()
        assert bk in site.stores.registry.branches(), "kept during the grace"
        assert bk not in worker.loops
        clock.now += GRACE_S
        worker.wake()
        worker.settle()
        assert bk not in site.stores.registry.branches()
        assert site.stores.events.pending_count(bk) == 0
        assert site.stores.leases.holder(bk) is None
    finally:
        worker.shutdown()


def _gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value(name)


def test_the_pool_gauges_show_owned_busy_and_waiting(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str, gates: Gates
) -> None:
    """One thread, two branches whose pushes hang: two owned, one pass running, one waiting
    for the thread; all idle once the pushes go."""
    settings = replace(settings_for(tmp_path, key_prefix), branch_threads=1)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    for name in ("g0", "g1"):
        site.branch(name)
        site.edit(name, f"cm-{name}")
        gates.held.add(f"{name}.git")
    with Running(site.worker("w", time.time, gates)):
        wait_until(
            lambda: (
                (
                    _gauge("gitops_reverser_owned_branches"),
                    _gauge("gitops_reverser_busy_threads"),
                    _gauge("gitops_reverser_waiting_branches"),
                )
                == (2.0, 1.0, 1.0)
            ),
            DEADLINE_S,
            "two owned, one running, one waiting",
        )
        gates.release.set()
        wait_until(lambda: all(site.pushed(n) for n in ("g0", "g1")), DEADLINE_S, "the pushes")
        wait_until(
            lambda: _gauge("gitops_reverser_busy_threads") == 0.0, DEADLINE_S, "no thread busy"
        )


def test_an_idle_branch_tick_pass_reads_three_keys_and_writes_none(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """Issue 29's idle cost: an idle branch (five GitTargets, nothing owed to any applier,
    its receiver delivered: P14) gets its steady tick's pass, and that pass sends three
    commands: the claim of stranded events (XPENDING, M8), the receiver's last delivery (GET,
    P14) and the outcomes (XRANGE, A4). Its GitTargets' settings and its state are not read
    again and nothing is published. Once something is owed (an outside push), the desk reads
    them and decides again."""
    settings = settings_for(tmp_path, key_prefix)
    counts: Counter[str] = Counter()
    client = counting_client(settings.redis_url, counts)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    bk = site.branch("quiet")
    url = str(tmp_path / "quiet.git")
    for i in range(1, 5):  # four more GitTargets on the branch
        site.stores.configs.publish_target(
            target_config(
                GitTargetUid(f"gt-quiet-{i}"), f"team{i}", "gt", url, "main", path=f"a{i}"
            )
        )
    clock = Clock()
    NoticeWriter(site.client, Keys(key_prefix), clock=lambda: clock.now).delivered(url)
    worker = BranchWorker(settings, Stores.build(client, settings), "w1", clock)
    try:
        _take_all(worker, clock, 1)
        loop = worker.loops[bk]
        assert len(site.stores.configs.targets_of(bk)) == 5
        clock.now += settings.steady_tick.total_seconds()
        counts.clear()
        worker.jobs.pass_(bk, loop, [], [])
        assert counts == Counter({"XPENDING": 1, "GET": 1, "XRANGE": 1}), counts
        sha = push(url, tmp_path / "other", {"n.md": "x\n"}, "foreign")
        counts.clear()
        notice = PushNotice("team/gp-quiet", url, "refs/heads/main", sha, "d-1", clock.now)
        worker.jobs.pass_(bk, loop, [], [notice])
        assert counts["SMEMBERS"] >= 1, "a foreign commit is owed: the desk reads again"
        assert site.stores.states.read(bk).foreign_tip == sha
    finally:
        worker.shutdown()
        client.close()
