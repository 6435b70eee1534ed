"""U1: a branch whose remote refuses every push holds one event per object, however many edits
arrive, loses none of them (the newest state is pushed once the remote accepts again), and
stops retrying, with its keys gone, once its GitTarget is deleted.

The remote is a real bare repository whose ``pre-receive`` hook refuses while the test wants
it to; every refused attempt is logged by the hook, so the test counts them.
"""

from __future__ import annotations

import stat
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from sandbox.githost.outside import git, push
from services.branch_worker.orphans import GRACE_S
from services.branch_worker.worker import BranchWorker
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, ObjectId
from shared.store.keys import Keys
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import Site, settings_for

pytestmark = pytest.mark.integration

#: The probe edited a 200 KiB ConfigMap 100 times (18.8 MB of stream before U1). The claim is
#: relative to the object's size (the branch holds about one event's worth, not one per edit),
#: so a 20 KiB ConfigMap edited as often shows it as well: before U1 the stream held 100
#: events, ~2 MB, against a bound of 60 KiB; at the probe's size the test moved ~20 MB of YAML
#: through the writer and git and took minutes of CPU on a busy machine.
SIZE = 20 * 1024
EDITS = 100
#: The bound stated in shared/store/streams.py: one entry per object with an unpushed edit.
#: One object here, so the stream holds one event (~SIZE) and the branch's keys together stay
#: under three events' worth, whatever the number of edits.
BOUND_BYTES = 3 * SIZE


def _refuse(bare: Path, log: Path) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho refused >> {log}\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def _accept(bare: Path) -> None:
    (bare / "hooks" / "pre-receive").unlink()


def _edit(site: Site, name: str, i: int) -> None:
    bk, uid = site.repos[name]
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "team"},
        "data": {"edit": f"edit-{i:03d}", "blob": f"{i:03d}" * (SIZE // 3)},
    }
    site.stores.events.publish(
        bk,
        ObjectEvent(
            GitTargetRef(uid, "team", "gt"),
            "UPDATE",
            ObjectId("", "v1", "configmaps", "ConfigMap", "team", "big"),
            "uid-big",
            str(i),
            body,
            (),
            float(i),
        ),
    )


def _turn(worker: BranchWorker, clock: Clock) -> None:
    clock.now += 1.0  # past RETRY_S: a branch with unpushed writes gets its pass
    worker.wake()
    worker.settle()


def _branch_bytes(site: Site, bk: BranchKey) -> int:
    keys = list(site.client.scan_iter(f"{site.prefix}:branch:{bk}:*"))
    return sum(int(site.client.memory_usage(k) or 0) for k in keys)


def test_a_branch_that_cannot_push_stays_bounded_and_goes_with_its_gittarget(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """Fails before U1: every edit stayed in the stream (100 events, ~20 MB), and a branch
    with unpushed writes was never retired, so its pushes were retried for ever."""
    # no heartbeat thread runs here (the test drives wakes by hand): a lease long enough
    # for the whole test, however slow the machine, so longer than the suite's 300 s timeout
    # (the lease expires in Redis in real time; a lease shorter than a slow run lapsed and the
    # retirement at the end was refused as by a lost lease)
    settings = settings_for(tmp_path, key_prefix, lease_period=timedelta(minutes=20))
    site = Site(tmp_path, redis_client, key_prefix, settings)
    bk = site.branch("stuck")
    bare = site.tmp / "stuck.git"
    push(str(bare), site.tmp / "seed", {"README.md": "seed\n"}, "seed")
    refusals = site.tmp / "refusals.log"
    clock = Clock()
    worker = site.worker("w1", clock)
    try:
        _turn(worker, clock)
        assert bk in worker.loops
        _refuse(bare, refusals)
        for i in range(EDITS):
            _edit(site, "stuck", i)
            if i % 10 == 9:
                _turn(worker, clock)
        _turn(worker, clock)
        assert refusals.exists(), "the worker tried to push and was refused"
        assert worker.loops[bk].stalled
        assert site.client.xlen(Keys(site.prefix).branch_events(bk)) == 1
        used = _branch_bytes(site, bk)
        assert used < BOUND_BYTES, f"{used} bytes for the branch's keys"

        _accept(bare)
        for _ in range(5):
            _turn(worker, clock)
        assert site.stores.events.pending_count(bk) == 0, "everything pushed and acknowledged"
        path = "apps/team/configmaps/big.yaml"
        final = git("show", f"main:{path}", cwd=bare)
        assert f"edit: edit-{EDITS - 1:03d}" in final
        introduced = git("log", "--format=%H", f"-Gedit-{EDITS - 1:03d}", "main", cwd=bare)
        assert len(introduced.split()) == 1, "the final state was pushed once"

        _refuse(bare, refusals)
        _edit(site, "stuck", EDITS)
        _turn(worker, clock)
        assert worker.loops[bk].stalled
        assert site.stores.health.stalls()[bk].reason == "PushFailing"  # T4
        _, uid = site.repos["stuck"]
        config = site.stores.configs.target(uid)
        assert config is not None
        site.stores.configs.forget_target(config)  # the watcher, when the GitTarget is deleted
        for _ in range(3):
            clock.now += GRACE_S / 2
            _turn(worker, clock)
        assert bk not in worker.loops
        keys = sorted(str(k) for k in site.client.scan_iter(f"{site.prefix}:branch:{bk}:*"))
        assert keys == [f"{site.prefix}:branch:{bk}:fence"]
        assert site.stores.health.stalls() == {}, "T4: the stall went with the branch"
        assert bk not in site.stores.registry.branches()
        tried = refusals.read_text().count("refused")
        for _ in range(3):
            _turn(worker, clock)
        assert refusals.read_text().count("refused") == tried, "no retry after retirement"
    finally:
        worker.shutdown()
