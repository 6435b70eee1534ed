"""N2: a stall reason Redis cannot encode is stored readable, never raised (fakeredis: unit)."""

from __future__ import annotations

import fakeredis

from shared.model.ids import BranchKey
from shared.store.branch_health import BranchHealth
from shared.store.keys import Keys


def test_a_message_with_lone_surrogates_is_stored() -> None:
    """Failed before: redis-py's encoder raised ``UnicodeEncodeError`` (surrogates not
    allowed), which ended the branch worker."""
    health = BranchHealth(fakeredis.FakeRedis(decode_responses=True), Keys("test"))
    bk = BranchKey("bk")
    garbage = b"bad line length character: \x92\xff".decode("utf-8", "surrogateescape")
    health.stalled(bk, "BranchStalled", f"GitTemporary: {garbage}", 5.0)
    stall = health.stalls()[bk]
    assert stall.message == "GitTemporary: bad line length character: ??"
