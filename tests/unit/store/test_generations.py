"""Counters that spare a per-GitTarget or per-branch read while nothing moves (idle cost):
the refusals' counter behind the watcher's status reads (``RefusalReader``), the targets'
counter behind the owner's orphan check (``Orphans``)."""

from __future__ import annotations

import json

import fakeredis

from services.branch_worker.orphans import CHECK_EVERY_S, FULL_CHECK_EVERY_S, Orphans
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.config import REFUSALS, TARGETS, ConfigStore, RefusalReader
from shared.store.keys import Keys
from tests.configs import branch_config, target_config

A, B = GitTargetUid("uid-a"), GitTargetUid("uid-b")


def _store() -> tuple[fakeredis.FakeRedis, Keys, ConfigStore]:
    client = fakeredis.FakeRedis(decode_responses=True)
    keys = Keys("test")
    return client, keys, ConfigStore(client, keys)


def test_refusals_are_read_again_only_when_the_counter_moves_or_a_full_pass_is_due() -> None:
    client, keys, configs = _store()
    reader = RefusalReader(configs, full_every=3)
    configs.set_refusal(A, "Invalid", "bad")
    assert reader.first_refusals([A, B]) == {A: {"reason": "Invalid", "message": "bad"}}
    # written behind ConfigStore's back (an old writer): no counter, so not seen at once
    client.hset(keys.target(B), "refusal:folder", json.dumps({"reason": "X", "message": "y"}))
    assert reader.first_refusals([A, B]) == {A: {"reason": "Invalid", "message": "bad"}}
    assert reader.first_refusals([A, B]) == {A: {"reason": "Invalid", "message": "bad"}}
    assert B in reader.first_refusals([A, B]), "the full pass reads everything again"
    configs.clear_refusal(A)
    assert reader.first_refusals([A, B]) == {B: {"reason": "X", "message": "y"}}, "moved"


def test_the_refusals_counter_moves_only_when_something_was_set_or_lifted() -> None:
    _client, _keys, configs = _store()
    configs.clear_refusal(A, key="held")  # every commit lifts "held": nothing was there
    assert configs.generation(REFUSALS) is None
    configs.set_refusal(A, "Invalid", "bad", key="held")
    configs.clear_refusal(A, key="held")
    assert configs.generation(REFUSALS) == "2"


def test_the_orphan_check_looks_at_every_branch_only_when_a_gittarget_left_one() -> None:
    _client, _keys, configs = _store()
    now = [0.0]
    looked: list[int] = []
    orphans = Orphans(_Counting(configs, looked), lambda: now[0])  # type: ignore[arg-type]
    bks = []
    for uid, name in ((A, "a"), (B, "b")):
        url = f"https://git.example.com/{name}.git"
        bks.append(
            configs.publish_served(
                branch_config(url, "main", "team", f"gp-{name}"),
                [target_config(uid, "team", "gt", url, "main", path="apps")],
            )
        )
    first, second = bks

    def check(idle: list[BranchKey]) -> list[BranchKey]:
        now[0] += CHECK_EVERY_S
        return orphans.to_retire(idle)

    assert check([first]) == [] and looked == [1], "the first check looks"
    assert check([first]) == [] and looked == [1], "nothing left a branch: the counter alone"
    assert check([first, second]) == [] and looked == [1, 2], "a branch not seen before"
    assert check([first, second]) == [] and looked == [1, 2]
    configs.withdraw_target(A)
    assert check([first, second]) == [] and looked == [1, 2, 2], "the counter moved"
    now[0] += FULL_CHECK_EVERY_S  # the grace is over; while it ran every check looked
    assert check([first, second]) == [first]
    assert configs.generation(TARGETS) == "1"


class _Counting:
    """The ConfigStore, counting how many branches each orphan look asks about."""

    def __init__(self, configs: ConfigStore, looked: list[int]) -> None:
        self._configs = configs
        self._looked = looked

    def generation(self, what: str) -> str | None:
        return self._configs.generation(what)

    def without_targets(self, bks: list[BranchKey]) -> set[BranchKey]:
        self._looked.append(len(bks))
        return self._configs.without_targets(bks)
