"""W1: the last API edit of each object of a branch, kept for the apply window (fakeredis)."""

from __future__ import annotations

import fakeredis

from shared.model.ids import BranchKey
from shared.store.api_edits import ApiEdits
from shared.store.keys import Keys

BK = BranchKey("bk-1")
APP = ("uid-1", "", "ConfigMap", "team", "app")
OTHER = ("uid-1", "", "ConfigMap", "team", "other")


def test_the_later_edit_is_kept_old_ones_dropped_and_the_set_expires() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    keys = Keys("test")
    edits = ApiEdits(client, keys)
    edits.remember(BK, OTHER, 100.0, keep_s=900)
    edits.remember(BK, APP, 500.0, keep_s=900)
    edits.remember(BK, APP, 400.0, keep_s=900)  # an older edit seen late: the later one stays
    assert edits.last(BK, APP) == 500.0
    assert edits.last(BK, OTHER) == 100.0
    edits.remember(BK, APP, 1200.0, keep_s=900)  # 100 is past what any window can need
    assert (edits.last(BK, APP), edits.last(BK, OTHER)) == (1200.0, None)
    assert 0 < client.ttl(keys.branch_api_edits(BK)) <= 900
    assert edits.last(BranchKey("other"), APP) is None
