"""``services.dispatcher.jobs.finish`` when the dispatcher dies half way (W1, S3, D1)."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest

from services.dispatcher import jobs
from shared.model.config import ApplierRef
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from shared.store.ledger import Ledger
from shared.store.watches import WatchState

BK = BranchKey("bk-1")
REQUEST = ApplyRequest(
    "tok-1",
    BK,
    "https://git.example/r.git",
    "main",
    "c" * 40,
    {"CatchUp": ["gt-1"]},
    ApplierRef("Kustomization", "team", "apps", ""),
    1000.0,
)


class Killed(Exception):
    """The process died here (SIGKILL): nothing after this write happens."""


def _context() -> jobs.Context:
    client: Any = fakeredis.FakeRedis(decode_responses=True)
    keys = Keys("unit")
    return jobs.Context(
        Settings(),
        Attempts(client, keys, "apply-attempts"),
        BranchStates(client, keys),
        ConfigStore(client, keys),
        Ledger(client, keys),
        None,  # type: ignore[arg-type]  # finish reaches no cluster
        WatchState(client, keys),
    )


def test_a_finish_cut_short_never_reports_an_outcome_the_ledger_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """W1 reads the attempt while it is out and the ledger once an outcome cleared it. A
    dispatcher killed between two writes must not leave an outcome (which clears the attempt)
    without a ledger entry: the window would close on an apply still running, and its revert
    of an API edit be mirrored (the safety suite's kept schedule ``LEDGER_GAP``). The entry is
    written by the report's own script, never by a write of its own (either order of two
    writes fails here), so a kill cuts both or neither."""
    ctx = _context()

    def separate(*args: Any) -> None:
        raise AssertionError("the ledger was written apart from the report")

    def dies(*args: Any, **kwargs: Any) -> bool:
        raise Killed

    monkeypatch.setattr(ctx.ledger, "record", separate)
    monkeypatch.setattr(ctx.attempts, "report_once", dies)
    with pytest.raises(Killed):
        jobs.finish(ctx, REQUEST, AttemptOutcome("tok-1", "Delivered", finished_at=1002.0))
    assert ctx.attempts.outcomes(BK) == []
    assert ctx.ledger.last_request(GitTargetUid("gt-1"))[0] is None


def test_a_finish_records_the_ledger_and_one_outcome() -> None:
    """S3, D1: the ledger holds the request and the branch one outcome; a second finish of
    the same token reports nothing more."""
    ctx = _context()
    jobs.finish(ctx, REQUEST, AttemptOutcome("tok-1", "Delivered", finished_at=1002.0))
    jobs.finish(ctx, REQUEST, AttemptOutcome("tok-1", "Failed", finished_at=1003.0))
    last, _ = ctx.ledger.last_request(GitTargetUid("gt-1"))
    assert last is not None and last.token == "tok-1"
    assert len(ctx.attempts.outcomes(BK)) == 1
