"""The end of an attempt (D1, S3): the outcome and the ledger entry are written together.

``jobs.finish`` reports the token's one outcome and records the GitTargets' ledger entry, which
the branch worker's apply window reads once the attempt is no longer out (W1). A dispatcher
killed right after the report was acknowledged must not leave the outcome without the entry:
the token's guard refuses a second report, so the entry would be lost for good. Real Redis.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable

import pytest
import redis

from services.dispatcher import jobs
from services.dispatcher.jobs import Context, finish
from shared.model.config import ApplierRef
from shared.model.ids import Branch, BranchKey, GitTargetUid
from shared.model.ledger import LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.attempts import Attempts

pytestmark = pytest.mark.integration

URL = "http://git.example/apps.git"
UIDS = ("uid-a", "uid-b")


class Killed(BaseException):
    """The process dies here (nothing after this line of ``finish`` runs)."""


class DyingAttempts(Attempts):
    """Attempts whose process is killed as soon as Redis acknowledged the report."""

    def report_once(
        self,
        bk: BranchKey,
        outcome: AttemptOutcome,
        *,
        served: Iterable[str] = (),
        last_request: LastRequest | None = None,
    ) -> bool:
        super().report_once(bk, outcome, served=served, last_request=last_request)
        raise Killed


def _context(client: redis.Redis, prefix: str) -> Context:
    settings = Settings(redis_url="redis://unused", key_prefix=prefix, apply_queue=f"{prefix}-q")
    return Context.build(settings, client, clusters=None)  # type: ignore[arg-type]


def _request(commit: str = "c" * 40) -> ApplyRequest:
    return ApplyRequest(
        uuid.uuid4().hex,
        Branch(URL, "main").key,
        URL,
        "main",
        commit,
        {"CatchUp": list(UIDS)},
        ApplierRef("Kustomization", "team", "apps", "default"),
        time.time() - 3,
    )


def test_a_dispatcher_killed_right_after_the_report_keeps_the_ledger_entry(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """S3/W1: on the old code (report, then ledger) the entry was never written."""
    ctx = _context(redis_client, key_prefix)
    dying = dataclasses.replace(ctx, attempts=DyingAttempts(redis_client, ctx.attempts._keys, "q"))
    request = _request()
    outcome = AttemptOutcome(request.token, "Delivered", "applied", finished_at=time.time())
    with pytest.raises(Killed):
        finish(dying, request, outcome)
    reported = ctx.attempts.outcomes(BranchKey(request.branch_key))
    assert [o.token for _, o in reported if o is not None] == [request.token]
    for uid in UIDS:
        entry, version = ctx.ledger.last_request(GitTargetUid(uid))
        assert entry is not None and entry.token == request.token, uid
        assert (entry.outcome, entry.sent_at, version) == ("Delivered", request.sent_at, 1)


def test_a_second_finish_of_the_token_changes_neither_the_outcomes_nor_the_ledger(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """D1: the job run again after a crash reports nothing and leaves the first entry."""
    ctx = _context(redis_client, key_prefix)
    request = _request()
    first = AttemptOutcome(request.token, "Delivered", "applied", finished_at=time.time())
    finish(ctx, request, first)
    finish(ctx, request, dataclasses.replace(first, outcome="Failed", message="again"))
    reported = ctx.attempts.outcomes(BranchKey(request.branch_key))
    assert [o.outcome for _, o in reported if o is not None] == ["Delivered"]
    entry, version = ctx.ledger.last_request(GitTargetUid(UIDS[0]))
    assert entry is not None and (entry.outcome, version) == ("Delivered", 1)


class AwayAttempts(Attempts):
    """Attempts whose Redis is away for the first ``away`` reports (refused connections)."""

    away = 3

    def report_once(
        self,
        bk: BranchKey,
        outcome: AttemptOutcome,
        *,
        served: Iterable[str] = (),
        last_request: LastRequest | None = None,
    ) -> bool:
        if self.away:
            self.away -= 1
            raise redis.ConnectionError("Connection refused")
        return super().report_once(bk, outcome, served=served, last_request=last_request)


def test_an_outcome_reached_while_redis_is_away_is_reported_once_it_is_back(
    redis_client: redis.Redis, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C9/W1: the soak's seed 197924 (Delivered while Redis was killed): on the old code the
    job failed, the outcome and the ledger entry were lost, and the branch's apply window
    closed at the attempt's deadline with no trace of the apply that ran."""
    pauses: list[float] = []
    monkeypatch.setattr(jobs, "_pause", pauses.append)
    ctx = _context(redis_client, key_prefix)
    away = dataclasses.replace(ctx, attempts=AwayAttempts(redis_client, ctx.attempts._keys, "q"))
    request = _request()
    outcome = AttemptOutcome(request.token, "Delivered", "applied", finished_at=time.time())
    finish(away, request, outcome)
    assert len(pauses) == 3
    reported = ctx.attempts.outcomes(BranchKey(request.branch_key))
    assert [o.token for _, o in reported if o is not None] == [request.token]
    entry, _ = ctx.ledger.last_request(GitTargetUid(UIDS[0]))
    assert entry is not None and entry.token == request.token
