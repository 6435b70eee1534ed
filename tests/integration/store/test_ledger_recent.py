"""The ledger keeps a GitTarget's recent requests for the apply window (W1), on real Redis.

An applier's write read late is judged by the request in force when it was made, which a newer
one may have replaced as ``lastRequest``; ``recent`` keeps the last ``RECENT``, written by the
same Lua as ``lastRequest`` whether the dispatcher reports (``Attempts.report_once``) or a
caller records directly (``Ledger.record``).
"""

from __future__ import annotations

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
