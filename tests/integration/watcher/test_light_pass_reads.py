"""The watcher's light passes read only what changed (issue 29, idle cost). P10
(``status.remote``): the owners name each branch whose verification they publish in a set,
the pass takes that set in one command and reads those branches alone. S3, O6
(``status.applier``): each ledger write names its entry in a set, and the pass polls only
those entries' versions. Each reads everything again every ``FULL_EVERY_S``, and tries a
failed write again. Commands are counted on the pass's own connection; real Redis."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from services.watcher import applier_status
from services.watcher.applier_status import ApplierStatus
from services.watcher.remote_status import FULL_EVERY_S, RemoteStatus
from shared.kube.errors import KubeError
from shared.model.config import ApplierRef
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.ledger import LastRequest
from shared.model.receivers import ReceiverRecord
from shared.settings import Settings
from shared.store.branch_state import BranchStates
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.ledger import Ledger
from shared.store.receivers import ReceiverDirectory
from tests.integration.counting import counting_client

pytestmark = pytest.mark.integration


class Writer:
    """A status writer that records what it was asked to write, or fails while ``failing``."""

    def __init__(self) -> None:
        self.written: list[tuple[str, dict[str, Any]]] = []
        self.failing = False

    def write_field(self, kind: Any, meta: Any, field: str, value: dict[str, Any]) -> None:
        if self.failing:
            raise KubeError("the API is away")
        self.written.append((meta.name, value))


def _counting(counts: Counter[str]) -> redis.Redis:
    return counting_client(Settings.from_env().redis_url, counts)


def _served(i: int) -> Any:
    meta = SimpleNamespace(name=f"gt{i}", namespace="team", uid=f"uid-{i}")
    target = SimpleNamespace(
        uid=GitTargetUid(f"uid-{i}"), meta=meta, controls=SimpleNamespace(remote=None)
    )
    return SimpleNamespace(target=target, branch=BranchKey(f"bk-{i}"))


def test_the_light_pass_reads_the_changed_branches_alone(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    counts: Counter[str] = Counter()
    client = _counting(counts)
    now = [0.0]
    writer = Writer()
    remote = RemoteStatus(writer, BranchStates(client, keys), clock=lambda: now[0])  # type: ignore[arg-type]
    served = [_served(i) for i in range(5)]
    try:
        assert remote.track(served) == 0, "nothing verified yet"
        assert counts["HGET"] == 5, "the first pass reads every branch"
        counts.clear()
        now[0] += 2.0
        assert remote.sync() == 0
        assert counts == Counter({"SPOP": 1}), "nothing changed: one command"
        lease = Leases(redis_client, keys, 60_000).acquire(BranchKey("bk-3"), "w1")
        assert lease is not None
        BranchStates(redis_client, keys).remember_ours(lease, "a" * 40, (), at=100.0)
        counts.clear()
        now[0] += 2.0
        writer.failing = True
        assert remote.sync() == 0
        assert counts == Counter({"SPOP": 1, "HGET": 1}), "the changed branch alone"
        writer.failing = False
        counts.clear()
        now[0] += 2.0
        assert remote.sync() == 1, "a failed write is tried again at the next pass"
        assert counts == Counter({"SPOP": 1, "HGET": 1})
        shown = [(name, v["revision"], v["verifiedBy"]) for name, v in writer.written]
        assert shown == [("gt3", "a" * 40, "Push")]
        counts.clear()
        now[0] += FULL_EVERY_S
        assert remote.sync() == 0, "written already"
        assert counts["HGET"] == 5, "every branch again, once a full period passed"
    finally:
        client.close()


def _view(i: int, shown: Any = None) -> Any:
    meta = SimpleNamespace(name=f"gt{i}", namespace="team", uid=f"uid-{i}")
    ref = ApplierRef("Kustomization", "flux-system", f"apps{i}", "default")
    uid = GitTargetUid(f"uid-{i}")
    return SimpleNamespace(uid=uid, meta=meta, applier=ref, applier_status=shown)


def test_the_applier_light_pass_polls_the_changed_entries_alone(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    counts: Counter[str] = Counter()
    client = _counting(counts)
    now = [0.0]
    writer = Writer()
    status = ApplierStatus(writer, Ledger(client, keys), clock=lambda: now[0])  # type: ignore[arg-type]
    views = [_view(i) for i in range(5)]
    try:
        assert status.track(views) == 5, "each shows its applier, without a request"
        shown = dict(writer.written)
        views = [_view(i, shown[f"gt{i}"]) for i in range(5)]  # as the next listing shows
        writer.written.clear()
        counts.clear()
        now[0] += 10.0
        assert status.track(views) == 0, "a reconcile pass that lists the same: nothing read"
        assert counts == Counter({"SPOP": 1}), counts
        request = LastRequest("req-1", "c" * 40, ("CatchUp",), 1.0, 2.0, "Delivered")
        Ledger(redis_client, keys).record(["uid-2"], request)
        counts.clear()
        now[0] += 2.0
        assert status.sync() == 1
        assert counts == Counter({"SPOP": 1, "HGET": 1, "HMGET": 1}), "the changed entry alone"
        assert [name for name, _ in writer.written] == ["gt2"]
        counts.clear()
        now[0] += applier_status.FULL_EVERY_S
        assert status.sync() == 0
        assert counts["HGET"] == 5, "every entry's version again, once a full period passed"
    finally:
        client.close()


def test_a_receiver_record_published_again_unchanged_is_not_written(key_prefix: str) -> None:
    """The watcher's pass publishes every receiver: the same record again sends nothing; a
    changed one is written; after Redis lost its data (C8: ``forget_published``) it is
    written again."""
    keys = Keys(key_prefix)
    counts: Counter[str] = Counter()
    client = _counting(counts)
    directory = ReceiverDirectory(client, keys)
    record = ReceiverRecord("team", "gp", "github", "webhook", "https://git.example/a.git", ())
    try:
        directory.publish("d1", record)
        assert counts["SET"] == 1
        counts.clear()
        directory.publish("d1", record)
        assert sum(counts.values()) == 0, "unchanged: nothing sent"
        directory.publish("d1", replace(record, branches=("main",)))
        assert counts["SET"] == 1, "changed: written"
        client.delete(keys.receiver("d1"))  # as a wipe would
        directory.forget_published()
        counts.clear()
        directory.publish("d1", replace(record, branches=("main",)))
        assert counts["SET"] == 1 and directory.lookup("d1") is not None
    finally:
        client.close()
