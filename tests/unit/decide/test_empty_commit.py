"""``onRefusal: PushEmptyCommit`` (P11): when the owner pushes an empty commit for refused
edits, with time injected (``now``), never read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.decide.empty_commit import (
    MIN_INTERVAL_S,
    EmptyCommits,
    Hold,
    PushEmpty,
    Settle,
    asks_empty_commit,
    decide,
    emptied,
    owe,
    settled,
)
from shared.model.config import ApplierRef
from shared.model.ids import GitTargetUid
from tests.configs import target_config

T = 1_000.0
TIP = "a" * 40


def _target(**changes: object) -> object:
    base = target_config(
        GitTargetUid("u1"), "a", "t", "https://h/r", "main", path="x", on_refusal="PushEmptyCommit"
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_who_asks() -> None:
    """Without an applier, not suspended, not signing: PushEmptyCommit asks; anything else not."""
    assert asks_empty_commit(_target())  # type: ignore[arg-type]
    ref = ApplierRef("Kustomization", "a", "apps", "default")
    for changed in (
        {"on_refusal": "None"},
        {"on_refusal": "Reapply"},
        {"applier": ref},
        {"suspended": True},
        {"signing_secret": "key"},
    ):
        assert not asks_empty_commit(_target(**changed)), changed  # type: ignore[arg-type]


def test_a_filed_refusal_on_a_quiet_branch_pushes_at_once() -> None:
    state = owe(EmptyCommits(), "u1", filed=True, tip=TIP)
    assert decide(state, asking=["u1"], quiet=True, now=T, tip=TIP) == PushEmpty(("u1",))


def test_nothing_owed_or_nobody_asking_pushes_nothing() -> None:
    assert decide(EmptyCommits(), asking=["u1"], quiet=True, now=T, tip=TIP) == Hold()
    state = owe(EmptyCommits(), "u1", filed=True, tip=TIP)
    assert decide(state, asking=[], quiet=True, now=T, tip=TIP) == Hold()  # suspended or withdrawn


def test_a_busy_branch_waits_and_a_new_tip_settles_it() -> None:
    """Q4's reason: no empty commit while writes are unpublished; the commit that publishes
    them (or anyone's) moves the branch, so nothing is owed after it (coalesced)."""
    state = owe(EmptyCommits(), "u1", filed=True, tip=TIP)
    assert decide(state, asking=["u1"], quiet=False, now=T, tip=TIP) == Hold()
    assert decide(state, asking=["u1"], quiet=True, now=T, tip="b" * 40) == Settle()
    assert decide(settled(state), asking=["u1"], quiet=True, now=T, tip="b" * 40) == Hold()
    later = owe(state, "u2", filed=True, tip="b" * 40)  # noted while owing: the first tip holds
    assert later.tip == TIP


def test_a_refused_object_without_a_file_holds_its_target_until_our_next_push() -> None:
    state = owe(owe(EmptyCommits(), "u1", filed=True, tip=TIP), "u1", filed=False, tip=TIP)
    state = owe(state, "u2", filed=True, tip=TIP)
    assert decide(state, asking=["u1", "u2"], quiet=True, now=T, tip=TIP) == PushEmpty(("u2",))
    assert (
        decide(owe(EmptyCommits(), "u1", False, TIP), asking=["u1"], quiet=True, now=T, tip=TIP)
        == Hold()
    )
    after = owe(settled(state), "u1", filed=True, tip=TIP)
    assert decide(after, asking=["u1"], quiet=True, now=T, tip=TIP) == PushEmpty(("u1",))


def test_many_refusals_make_one_commit_for_every_target() -> None:
    state = EmptyCommits()
    for uid in ("u2", "u1", "u2", "u3"):
        state = owe(state, uid, filed=True, tip=TIP)
    assert decide(state, asking=["u1", "u2", "u3"], quiet=True, now=T, tip=TIP) == PushEmpty(
        ("u1", "u2", "u3")
    )


@pytest.mark.parametrize("after", [1.0, MIN_INTERVAL_S - 0.5])
def test_empty_commits_are_rate_limited(after: float) -> None:
    state = owe(emptied(EmptyCommits(), T), "u1", filed=True, tip=TIP)
    assert decide(state, asking=["u1"], quiet=True, now=T + after, tip=TIP) == Hold(
        T + MIN_INTERVAL_S
    )
    assert decide(state, asking=["u1"], quiet=True, now=T + MIN_INTERVAL_S, tip=TIP) == PushEmpty(
        ("u1",)
    )


def test_an_empty_commit_clears_what_was_owed() -> None:
    state = emptied(owe(EmptyCommits(), "u1", filed=True, tip=TIP), T)
    assert state == EmptyCommits(last_at=T)
    assert emptied(EmptyCommits(), T).tip is None
    assert decide(state, asking=["u1"], quiet=True, now=T + 2 * MIN_INTERVAL_S, tip=TIP) == Hold()
