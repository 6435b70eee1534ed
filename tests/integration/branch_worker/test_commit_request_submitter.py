"""A CommitRequest's submitter from the audit fact of its create (P5, P6; issue 15).

Facts: upstream-gitops-reverser.md §2.6 (a request binds only to an open window of the same
author and GitTarget, never closes another author's; AuthorAttributed reasons), §1.4 (the
grace; a missing fact never blocks). Real Redis, a real bare repository, facts appended
through the store, the injected clock.
"""

from __future__ import annotations

import dataclasses

import pytest

from services.branch_worker.attribution import Attributor
from services.branch_worker.branch import BranchLoop
from services.branch_worker.commit_requests import RequestDesk
from shared.decide.commit_requests import (
    ATTRIBUTED_FROM_AUDIT,
    AUTHOR_ATTRIBUTED,
    COMMITTER_FALLBACK,
    conditions,
)
from shared.model.attribution import AuthorFact
from shared.model.commit_requests import (
    COMMITTED,
    RESOLVED,
    UNRESOLVED,
    WINDOW_MISMATCH,
    CommitRequestItem,
    Outcome,
)
from shared.model.events import GitTargetRef
from shared.store.attribution import FactStreams
from shared.store.commit_requests import CommitRequests
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

GRACE = 3.0
CRS = "gitopsreverser.io/commitrequests"


def _setup(rig: Rig) -> tuple[BranchLoop, FactStreams, CommitRequests]:
    """An attributed GitTarget whose GitProvider's 30 s window stays open without a request."""
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=30.0)
    rig.configs.publish_branch(rig.branch)
    rig.target = dataclasses.replace(rig.target, audit_route="prod")
    rig.configs.publish_target(rig.target)
    facts = FactStreams(rig.client, rig.keys)
    store = CommitRequests(rig.client, rig.keys, 3600)
    loop = rig.loop(
        requests=RequestDesk(store, rig.branch.branch, rig.clock),
        attributor=Attributor(facts, rig.clock, GRACE),
    )
    return loop, facts, store


def _edit_by(rig: Rig, loop: BranchLoop, facts: FactStreams, user: str) -> None:
    """``user`` edits ConfigMap a: its window opens, authored by them."""
    facts.append("prod", {"configmaps": [AuthorFact(user, "update", "", "configmaps", "team",
                  "a", "uid-a", "1", "e-1", "2026-01-01T00:00:00Z")]})  # fmt: skip
    rig.publish("a")
    rig.drain(loop)
    window = loop.open_windows[rig.target.uid]
    assert window.author is not None and window.author.username == user


def _created_by(facts: FactStreams, user: str, uid: str = "cr-1", rv: str = "7") -> None:
    """The audit fact of the request's create, as the receiver keeps it."""
    facts.append("prod", {CRS: [AuthorFact(user, "create", "gitopsreverser.io", "commitrequests",
                  "team", uid, uid, rv, "e-2", "2026-01-01T00:00:01Z")]})  # fmt: skip


def _request(rig: Rig, uid: str = "cr-1", rv: str = "7") -> None:
    item = CommitRequestItem(
        target=GitTargetRef(rig.target.uid, "team", "gt"),
        uid=uid,
        namespace="team",
        name=uid,
        message="save: by request",
        close_delay_s=0,
        resource_version=rv,
    )
    rig.events.publish(rig.bk, item)


def _outcome(store: CommitRequests, uid: str = "cr-1") -> Outcome:
    found = store.outcome(uid)
    assert found is not None
    return found


def _attributed(outcome: Outcome) -> tuple[str, str]:
    wanted = next(w for w in conditions(outcome, None) if w.type == AUTHOR_ATTRIBUTED)
    return wanted.status, wanted.reason


def test_a_request_by_the_window_s_author_closes_it(rig: Rig) -> None:
    """P5, P6: alice's request binds to alice's window and commits it with its message."""
    loop, facts, store = _setup(rig)
    _edit_by(rig, loop, facts, "alice")
    _created_by(facts, "alice")
    _request(rig)
    rig.drain(loop)
    loop.flush()
    assert rig.commits() == ["save: by request", "seed"]
    outcome = _outcome(store)
    assert (outcome.reason, outcome.attribution, outcome.submitter) == (
        COMMITTED,
        RESOLVED,
        "alice",
    )
    assert _attributed(outcome) == ("True", ATTRIBUTED_FROM_AUDIT)
    assert rig.events.pending_count(rig.bk) == 0


def test_a_request_by_another_author_never_closes_the_window(rig: Rig) -> None:
    """P5, P6: bob's request finds alice's window open: WindowMismatch, and her window stays
    open to its own timer (no commit, its edit still pending)."""
    loop, facts, store = _setup(rig)
    _edit_by(rig, loop, facts, "alice")
    _created_by(facts, "bob")
    _request(rig)
    rig.drain(loop)
    loop.flush()
    assert rig.commits() == ["seed"]
    assert rig.target.uid in loop.open_windows
    outcome = _outcome(store)
    assert (outcome.reason, outcome.submitter) == (WINDOW_MISMATCH, "bob")
    assert _attributed(outcome) == ("True", ATTRIBUTED_FROM_AUDIT)


def test_a_later_create_fact_than_the_watcher_saw_still_names_the_submitter(rig: Rig) -> None:
    """P5: the request changed before the watcher published it (another resourceVersion):
    the create of its uid still names who submitted it, without waiting for the grace."""
    loop, facts, store = _setup(rig)
    _edit_by(rig, loop, facts, "alice")
    _created_by(facts, "alice", rv="7")
    _request(rig, rv="9")
    rig.drain(loop)
    loop.flush()
    assert (_outcome(store).reason, _outcome(store).submitter) == (COMMITTED, "alice")


def test_a_request_waits_for_its_fact_then_after_the_grace_binds_as_today(rig: Rig) -> None:
    """P5, P6: no fact of the request's create yet: it waits (nothing recorded, the window it
    would close stays open, no sleeping); after the grace it binds to the open window whoever's
    it is, AuthorAttributed=False CommitterFallback."""
    loop, facts, store = _setup(rig)
    _edit_by(rig, loop, facts, "alice")
    _request(rig)
    rig.drain(loop)
    loop.flush()
    assert store.outcome("cr-1") is None and rig.commits() == ["seed"]
    assert loop.next_deadline() == rig.clock.now + GRACE
    rig.clock.now += GRACE
    loop.handle([])
    loop.flush()
    assert rig.commits() == ["save: by request", "seed"]
    outcome = _outcome(store)
    assert (outcome.reason, outcome.attribution, outcome.submitter) == (COMMITTED, UNRESOLVED, "")
    assert _attributed(outcome) == ("False", COMMITTER_FALLBACK)


def test_a_fact_arriving_within_the_grace_is_used(rig: Rig) -> None:
    """P5: the request waits, then the create's fact arrives: bob's request never closes
    alice's window (without the wait it would have bound to it)."""
    loop, facts, store = _setup(rig)
    _edit_by(rig, loop, facts, "alice")
    _request(rig)
    rig.drain(loop)
    rig.clock.now += GRACE / 2
    _created_by(facts, "bob")
    loop.handle([])
    loop.flush()
    assert rig.commits() == ["seed"]
    assert _outcome(store).reason == WINDOW_MISMATCH
