"""The pure CommitRequest rules: binding, close deadline, conditions, TTL (P6)."""

from __future__ import annotations

from shared.decide.commit_requests import (
    ATTRIBUTED_FROM_AUDIT,
    AUTHOR_ATTRIBUTED,
    AUTHOR_CAPTURE_DISABLED,
    COMMITTER_FALLBACK,
    FINALIZE_BOUND_S,
    PUSHED,
    TARGET_NOT_FOUND,
    binding,
    close_deadline,
    concluded,
    conditions,
    expired,
    finalize_failed,
)
from shared.decide.conditions import Problem, merge
from shared.model.commit_requests import (
    ALREADY_PRESENT,
    COMMITTED,
    FINALIZE_FAILED,
    NO_WINDOW,
    RESOLVED,
    UNATTRIBUTED,
    UNRESOLVED,
    WAITING,
    WINDOW_MISMATCH,
    CommitRequestItem,
    Outcome,
)
from shared.model.crds import Condition
from shared.model.events import GitTargetRef
from shared.model.ids import GitTargetUid


def _by_type(outcome: Outcome | None, problem: Problem | None = None) -> dict[str, tuple[str, str]]:
    return {w.type: (w.status, w.reason) for w in conditions(outcome, problem)}


def test_a_request_binds_only_to_an_open_window_of_its_author() -> None:
    """P6: same author binds; none open is NoWindowInGrace; another author's window is
    never closed by it (WindowMismatch)."""
    assert binding(UNATTRIBUTED, UNATTRIBUTED) == ""
    assert binding(None, UNATTRIBUTED) == NO_WINDOW
    assert binding("alice", "bob") == WINDOW_MISMATCH
    assert binding("alice", UNATTRIBUTED) == ""  # a submitter not known binds to any


def test_the_deadline_is_receipt_plus_the_delay() -> None:
    """P6."""
    assert close_deadline(100.0, 0) == 100.0
    assert close_deadline(100.0, 300) == 400.0


def test_committed_is_ready_and_pushed() -> None:
    """P6."""
    got = _by_type(Outcome(COMMITTED, sha="abc", branch="main"))
    assert got["Ready"] == ("True", COMMITTED)
    assert got[PUSHED] == ("True", COMMITTED)
    assert got["Stalled"][0] == "False" and got["Reconciling"][0] == "False"
    assert got[AUTHOR_ATTRIBUTED][0] == "False"


def test_benign_no_commit_outcomes_are_ready_but_not_pushed() -> None:
    """P6: NoWindowInGrace and WindowMismatch are Ready=True; AlreadyPresent is pushed."""
    for reason in (NO_WINDOW, WINDOW_MISMATCH):
        got = _by_type(Outcome(reason))
        assert got["Ready"] == ("True", reason)
        assert got[PUSHED] == ("False", reason)
    assert _by_type(Outcome(ALREADY_PRESENT, sha="x"))[PUSHED] == ("True", ALREADY_PRESENT)


def test_waiting_and_not_yet_received_are_reconciling() -> None:
    """P6."""
    got = _by_type(Outcome(WAITING, deadline=1_000.0))
    assert got["Ready"] == ("False", WAITING)
    assert got["Reconciling"] == ("True", WAITING)
    assert _by_type(None)["Reconciling"][0] == "True"


def test_a_missing_gittarget_stalls_and_finalize_failed_too() -> None:
    """P6: what cannot recover is Stalled."""
    missing = _by_type(None, Problem(TARGET_NOT_FOUND, "gone", permanent=True))
    assert missing["Ready"] == ("False", TARGET_NOT_FOUND)
    assert missing["Stalled"] == ("True", TARGET_NOT_FOUND)
    assert _by_type(Outcome(FINALIZE_FAILED))["Stalled"] == ("True", FINALIZE_FAILED)


def _stored(
    outcome: Outcome | None, at: float, problem: Problem | None = None
) -> tuple[Condition, ...]:
    return merge((), conditions(outcome, problem), 1, at)


def test_a_finished_request_expires_after_the_ttl() -> None:
    """P6: counted from when it finished; a request still waiting never expires."""
    done = _stored(Outcome(COMMITTED, sha="a"), 1_000.0)
    assert not expired(done, 1_000.0 + 3599, 3600)
    assert expired(done, 1_000.0 + 3600, 3600)
    waiting = _stored(Outcome(WAITING, deadline=5.0), 1_000.0)
    assert not expired(waiting, 1e9, 3600)
    stalled = _stored(None, 1_000.0, Problem(TARGET_NOT_FOUND, "gone", permanent=True))
    assert expired(stalled, 1_000.0 + 10, 10)


def test_ttl_counts_from_the_stall_not_from_an_earlier_ready_false() -> None:
    """P6: Ready was False while it waited; the TTL starts when it stalled."""
    waiting = _stored(None, 1_000.0)
    failed = merge(waiting, conditions(Outcome(FINALIZE_FAILED), None), 1, 5_000.0)
    assert not expired(failed, 5_000.0 + 50, 100)
    assert expired(failed, 5_000.0 + 100, 100)


def test_a_status_with_a_final_outcome_is_concluded() -> None:
    """N10: the watcher never publishes again a request whose status shows a final outcome
    (every one of FINAL); one still on its way, or refused before any branch worker saw it
    (a GitTarget that may yet be created), is not concluded."""
    for reason in (COMMITTED, NO_WINDOW, WINDOW_MISMATCH, ALREADY_PRESENT, FINALIZE_FAILED):
        assert concluded(_stored(Outcome(reason, sha="a"), 1_000.0)), reason
    assert not concluded(())
    assert not concluded(_stored(None, 1_000.0))
    assert not concluded(_stored(Outcome(WAITING, deadline=5.0), 1_000.0))
    assert not concluded(_stored(None, 1_000.0, Problem(TARGET_NOT_FOUND, "no", permanent=True)))


def test_finalize_failed_comes_a_bound_after_the_deadline() -> None:
    """P6: a bound request's window not pushed FINALIZE_BOUND_S after its deadline."""
    assert not finalize_failed(100.0, 100.0 + FINALIZE_BOUND_S - 0.001)
    assert finalize_failed(100.0, 100.0 + FINALIZE_BOUND_S)
    assert finalize_failed(100.0, 110.0, bound_s=10.0)


def test_finalize_failed_is_lifted_by_the_commit() -> None:
    """P6: FinalizeFailed (Ready=False, Stalled=True) becomes Ready=True Committed, Stalled
    False, Pushed True, once the window's push lands."""
    failed = _stored(Outcome(FINALIZE_FAILED, "push refused"), 1_000.0)
    by_type = {c.type: (c.status, c.reason) for c in failed}
    assert by_type["Stalled"] == ("True", FINALIZE_FAILED)
    lifted = merge(failed, conditions(Outcome(COMMITTED, sha="a", branch="main"), None), 1, 1_050.0)
    by_type = {c.type: (c.status, c.reason) for c in lifted}
    assert by_type["Ready"] == ("True", COMMITTED)
    assert by_type["Stalled"] == ("False", COMMITTED)
    assert by_type[PUSHED] == ("True", COMMITTED)
    assert not expired(lifted, 1_050.0 + 59, 60), "the TTL counts from the commit"


def test_author_attributed_follows_how_the_submitter_was_found() -> None:
    """P5, P6: from the audit fact True (AttributedFromAudit); not found within the grace
    False (CommitterFallback); attribution off False (AuthorCaptureDisabled); not received
    yet Unknown."""
    found = Outcome(COMMITTED, sha="a", attribution=RESOLVED, submitter="alice")
    assert _by_type(found)[AUTHOR_ATTRIBUTED] == ("True", ATTRIBUTED_FROM_AUDIT)
    missing = Outcome(WINDOW_MISMATCH, attribution=UNRESOLVED)
    assert _by_type(missing)[AUTHOR_ATTRIBUTED] == ("False", COMMITTER_FALLBACK)
    assert _by_type(Outcome(NO_WINDOW))[AUTHOR_ATTRIBUTED] == ("False", AUTHOR_CAPTURE_DISABLED)
    assert _by_type(None)[AUTHOR_ATTRIBUTED][0] == "Unknown"
    message = next(w.message for w in conditions(found, None) if w.type == AUTHOR_ATTRIBUTED)
    assert "alice" in message


def test_a_known_submitter_never_binds_to_an_unresolved_window() -> None:
    """P6: a window whose author was not resolved is not the submitter's."""
    assert binding(UNATTRIBUTED, "alice") == WINDOW_MISMATCH
    assert binding("alice", "alice") == ""


def test_the_outcome_and_item_keep_the_submitter_through_redis_fields() -> None:
    """P5: the outcome's attribution and the item's resourceVersion survive their fields."""
    outcome = Outcome(COMMITTED, sha="a", attribution=RESOLVED, submitter="alice")
    assert Outcome.from_fields(outcome.to_fields()) == outcome
    item = CommitRequestItem(
        GitTargetRef(GitTargetUid("g"), "ns", "gt"), "u", "ns", "cr", "m", 0, resource_version="9"
    )
    assert CommitRequestItem.from_fields(item.to_fields()).resource_version == "9"
