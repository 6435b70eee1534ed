"""The ledger keeps a GitTarget's recent requests for the apply window (W1), on real Redis.

An applier's write read late is judged by the request in force when it was made, which a newer
one may have replaced as ``lastRequest``; ``recent`` keeps the last ``RECENT``, written by the
same Lua as ``lastRequest`` whether the dispatcher reports (``Attempts.report_once``) or a
caller records directly (``Ledger.record``).
"""

from __future__ import annotations

import json

import pytest
import redis

from shared.model.ids import BranchKey, GitTargetUid
from shared.model.ledger import LastRequest
from shared.model.requests import AttemptOutcome
from shared.store.attempts import Attempts
from shared.store.keys import Keys
from shared.store.ledger import RECENT, Ledger

pytestmark = pytest.mark.integration

UID = GitTargetUid("uid-1")


def request(n: int) -> LastRequest:
    return LastRequest(f"t-{n}", "c" * 40, ("CatchUp",), 100.0 + n, 101.0 + n, "Delivered")


def test_reports_and_records_keep_the_recent_requests_newest_first_and_bounded(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    ledger = Ledger(redis_client, keys)
    attempts = Attempts(redis_client, keys, "apply")
    assert ledger.recent(UID) == []
    ledger.record([UID], request(0))
    for n in range(1, RECENT + 5):
        outcome = AttemptOutcome(f"t-{n}", "Delivered", finished_at=101.0 + n)
        assert attempts.report_once(BranchKey("bk"), outcome, served=[UID], last_request=request(n))
    recent = ledger.recent(UID)
    assert [r.token for r in recent] == [f"t-{n}" for n in range(RECENT + 4, 4, -1)]
    assert recent[0] == request(RECENT + 4)
    last, version = ledger.last_request(UID)
    assert last == request(RECENT + 4)
    assert version == RECENT + 5


def test_the_recent_requests_are_a_capped_list_beside_the_entry(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """A report pushes one request and trims one (O(1)); the entry holds only lastRequest and
    version, which is all the status publish reads."""
    keys = Keys(key_prefix)
    ledger = Ledger(redis_client, keys)
    for n in range(RECENT + 3):
        ledger.record([UID], request(n))
    assert redis_client.type(keys.ledger_recent(UID)) == "list"
    assert redis_client.llen(keys.ledger_recent(UID)) == RECENT
    assert set(redis_client.hkeys(keys.ledger(UID))) == {"lastRequest", "version"}


def test_an_entry_an_older_version_wrote_keeps_its_recent_requests(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """Before the list, ``recent`` was a JSON list in the entry: read until the next record
    replaces it (and drops the field)."""
    keys = Keys(key_prefix)
    ledger = Ledger(redis_client, keys)
    older = [request(2).to_json(), request(1).to_json()]
    redis_client.hset(
        keys.ledger(UID),
        mapping={"lastRequest": request(2).to_json(), "version": 2, "recent": json.dumps(older)},
    )
    assert [r.token for r in ledger.recent(UID)] == ["t-2", "t-1"]
    ledger.record([UID], request(3))
    assert [r.token for r in ledger.recent(UID)] == ["t-3"]
    assert "recent" not in redis_client.hkeys(keys.ledger(UID))


def test_finished_requests_are_counted_by_outcome_per_git_target(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """Issue 26: the ledger script counts each GitTarget's finished requests by outcome, whoever
    writes them (a report counts once: a second report of the token is refused), for the
    GitTarget's ``apply_requests`` series, beside the entry (which keeps only lastRequest and
    version); the counts go with the GitTarget's other keys."""
    from shared.store.config import ConfigStore
    from shared.store.target_health import TargetHealth

    keys = Keys(key_prefix)
    ledger = Ledger(redis_client, keys)
    attempts = Attempts(redis_client, keys, "apply")
    other = GitTargetUid("uid-2")
    ledger.record([UID, other], request(0))
    failed = LastRequest("t-1", "c" * 40, ("CatchUp",), 1.0, 2.0, "Failed")
    outcome = AttemptOutcome("t-1", "Failed", finished_at=2.0)
    assert attempts.report_once(BranchKey("bk"), outcome, served=[UID], last_request=failed)
    assert not attempts.report_once(BranchKey("bk"), outcome, served=[UID], last_request=failed)

    health = TargetHealth(redis_client, keys)
    seen = health.observe([(UID, BranchKey("bk")), (other, BranchKey("bk"))])
    assert seen[UID].applies == {"Delivered": 1, "Stale": 0, "NothingToAsk": 0, "Failed": 1}
    assert seen[other].applies == {"Delivered": 1, "Stale": 0, "NothingToAsk": 0, "Failed": 0}
    assert set(redis_client.hkeys(keys.ledger(UID))) == {"lastRequest", "version"}
    ConfigStore(redis_client, keys).forget_uid(UID)
    gone = health.observe([(UID, BranchKey("bk"))])[UID]
    assert gone.applies == {"Delivered": 0, "Stale": 0, "NothingToAsk": 0, "Failed": 0}
