"""S1/A5 at the decision: the owner checks consent and that the refusal still stands when it
decides a Refusal, and drops it unsent when either is gone (issue 12 part 3)."""

from __future__ import annotations

from dataclasses import replace

from shared.decide.obligations import (
    Ask,
    Wait,
    consider,
    keep_consented,
    on_outcome,
    owe_catch_up,
    owe_foreign_commit,
    owe_refusal,
)
from shared.decide.quiet import BranchView
from shared.model.appliers import Applier

QUIET = BranchView(
    tip="c1", windows_open=0, pending_total=0, push_in_flight=False, last_write_at=100.0
)
BUSY = replace(QUIET, windows_open=1)
KS = Applier("Kustomization")
PERIODS = {"u1": 30.0, "u2": 30.0}


def _consider(applier: Applier, refusing: set[str], branch: BranchView, now: float, token: str):  # type: ignore[no-untyped-def]
    return consider(
        applier,
        periods=PERIODS,
        refusing=refusing,
        branch=branch,
        now=now,
        token=token,
        deadline_s=600.0,
    )


def test_a_refusal_with_consent_and_standing_is_sent() -> None:
    """S1: consent and a standing refusal: the Refusal goes out on a quiet branch."""
    applier = owe_refusal(KS, "u1", consents=True)
    after, decision = _consider(applier, {"u1"}, QUIET, 101.0, "t1")
    assert decision == Ask("c1", {"Refusal": frozenset({"u1"})})
    assert after.attempt is not None and after.attempt.token == "t1"


def test_consent_withdrawn_drops_the_refusal_unsent() -> None:
    """S1/A5: a GitTarget that no longer consents is not in ``refusing``: nothing is sent and
    nothing stays owed."""
    applier = owe_refusal(KS, "u1", consents=True)
    after, decision = _consider(applier, set(), QUIET, 101.0, "t1")
    assert decision == Wait("nothing owed")
    assert after.refusals == frozenset() and after.attempt is None


def test_a_refusal_that_no_longer_stands_is_dropped_unsent() -> None:
    """A5: the same when the refusal was lifted (the GitTarget recovered) but consent stays:
    the caller leaves the uid out of ``refusing`` and the decision sends nothing."""
    applier = owe_refusal(KS, "u2", consents=True)
    after, decision = _consider(applier, {"u1"}, QUIET, 101.0, "t1")
    assert isinstance(decision, Wait) and after.owes() == {}


def test_only_the_withdrawing_target_loses_its_refusal() -> None:
    """A5: each GitTarget cancels its own Refusal; another's still consented one is sent."""
    applier = owe_refusal(owe_refusal(KS, "u1", consents=True), "u2", consents=True)
    _, decision = _consider(applier, {"u2"}, QUIET, 101.0, "t1")
    assert decision == Ask("c1", {"Refusal": frozenset({"u2"})})


def test_withdrawn_while_waiting_for_quiet_is_asked_a_catch_up_instead() -> None:
    """S1 + A1/A2: a Refusal waiting on a busy branch beside a CatchUp; consent is withdrawn;
    once quiet, the Refusal is not asked and the CatchUp waits its own quiet period (it no
    longer rides along), then goes out alone."""
    applier = owe_catch_up(owe_refusal(KS, "u1", consents=True), "c1", ["u1"])
    waiting, decision = _consider(applier, {"u1"}, BUSY, 101.0, "t1")
    assert decision == Wait("the branch is busy")
    assert set(waiting.owes()) == {"Refusal", "CatchUp"}
    early, decision = _consider(waiting, set(), QUIET, 101.0, "t2")
    assert decision == Wait("quiet period", 130.0)
    assert set(early.owes()) == {"CatchUp"}
    _, decision = _consider(early, set(), QUIET, 130.0, "t3")
    assert decision == Ask("c1", {"CatchUp": frozenset({"u1"})})


def test_with_consent_the_catch_up_rides_along_with_the_refusal() -> None:
    """A2 (the case above with consent kept): the Refusal goes now and takes the CatchUp."""
    applier = owe_catch_up(owe_refusal(KS, "u1", consents=True), "c1", ["u1"])
    _, decision = _consider(applier, {"u1"}, QUIET, 101.0, "t1")
    assert decision == Ask("c1", {"Refusal": frozenset({"u1"}), "CatchUp": frozenset({"u1"})})


def test_a_foreign_commit_is_still_asked_without_the_dropped_refusal() -> None:
    """D2's 'never something weaker' is the dispatcher's; the owner simply asks what is still
    owed: the ForeignCommit goes out alone."""
    applier = owe_refusal(owe_foreign_commit(KS, "c1", ["u1"]), "u1", consents=True)
    _, decision = _consider(applier, set(), QUIET, 101.0, "t1")
    assert decision == Ask("c1", {"ForeignCommit": frozenset({"u1"})})


def test_the_attempt_out_keeps_its_reasons_for_the_dispatcher() -> None:
    """S1: consent withdrawn while a Refusal is out leaves the attempt alone (the dispatcher
    checks at the attempt, D2); its outcome still clears it."""
    applier = owe_refusal(KS, "u1", consents=True)
    out, _ = _consider(applier, {"u1"}, QUIET, 101.0, "t1")
    later, decision = _consider(out, set(), QUIET, 102.0, "t2")
    assert later.attempt == out.attempt and decision == Wait("nothing owed")
    assert on_outcome(later, "t1", "NothingToAsk", 103.0, ["Refusal"]).owes() == {}


def test_keep_consented_leaves_other_reasons_alone() -> None:
    """A5: only the Refusal set is filtered."""
    applier = owe_catch_up(
        owe_refusal(owe_foreign_commit(KS, "c1", ["u1"]), "u1", True), "c1", ["u1"]
    )
    kept = keep_consented(applier, [])
    assert set(kept.owes()) == {"ForeignCommit", "CatchUp"}
