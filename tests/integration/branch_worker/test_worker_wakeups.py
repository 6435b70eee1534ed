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
from typing import Any

import pytest
import redis
from prometheus_client import REGISTRY

from sandbox.githost.outside import push
from services.branch_worker.orphans import CHECK_EVERY_S, GRACE_S
from services.branch_worker.taking import ACQUIRE_EVERY_S
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import Branch, GitTargetUid, ObjectId
from shared.model.notices import PushNotice
from shared.model.requests import AttemptOutcome
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from tests.helpers import wait_until
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import DEADLINE_S, Gates, Running, Site, settings_for

pytestmark = pytest.mark.integration

#: Commands one scheduling round may send whatever the number of idle branches: the share
#: (ZCOUNT, SMEMBERS; at most once per ACQUIRE_EVERY_S), notices (XREAD), outcomes (XREAD),
#: and the blocking event read (XREADGROUP).
PER_ROUND = 5


def _counting_client(url: str, counts: Counter[str]) -> redis.Redis:
    """A client like the product's whose connections count every command they send."""

    class Counting(redis.Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            counts[str(args[0]).upper()] += 1
            super().send_command(*args, **kwargs)

        def pack_commands(self, commands: Any) -> Any:  # a pipeline's commands
            for command in commands:
                counts[str(command[0]).upper()] += 1
            return super().pack_commands(commands)

    return redis.Redis.from_url(url, decode_responses=True, connection_class=Counting)


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
    orphan check (one SCARD per branch every CHECK_EVERY_S) reach Redis; no pass runs, so no
    state is published, no settings or outcomes are read per branch."""
    branches = 12
    settings = settings_for(tmp_path, key_prefix)
    counts: Counter[str] = Counter()
    client = _counting_client(settings.redis_url, counts)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    for i in range(branches):
        site.branch(f"idle{i}")
    clock = Clock()
    worker = BranchWorker(settings, Stores.build(client, settings), "w1", clock)
    try:
        _take_all(worker, clock, branches)
        counts.clear()
        rounds = 10
        assert settings.steady_tick.total_seconds() > rounds, "no steady tick falls due here"
        for _ in range(rounds):
            clock.now += 1.0
            worker.wake()
            worker.settle()
        checks = int(rounds / CHECK_EVERY_S) + 1
        assert sum(counts.values()) <= rounds * PER_ROUND + branches * checks, counts
        assert set(counts) <= {"ZCOUNT", "SMEMBERS", "XREAD", "XREADGROUP", "SCARD"}, counts
        assert counts["XREADGROUP"] == rounds, "one event read per round, for all branches"
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
