"""Q5-Q7 as pure rules: tips are classified, notices are hints, idle branches tick."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared.decide.tips import (
    NoticeDecision,
    TipKind,
    classify_tip,
    on_notice,
    on_notices,
    remote_trusted,
    steady_tick_due,
)


def test_classify_tip() -> None:
    assert classify_tip("a", "a", ()) is TipKind.UNCHANGED
    assert classify_tip("b", "a", ("b",)) is TipKind.OURS
    assert classify_tip("c", "a", ("b",)) is TipKind.FOREIGN
    assert classify_tip(None, "a", ()) is TipKind.GONE
    assert classify_tip(None, None, ()) is TipKind.UNCHANGED
    assert classify_tip("a", None, ()) is TipKind.FOREIGN


def test_late_webhook_of_our_push_leaves_the_window_open() -> None:
    assert on_notice("ours", "ours", busy=True).close_window is False
    assert on_notice("ours", "ours", busy=True).read_tip is False


def test_any_other_notice_closes_the_window_and_reads_the_tip() -> None:
    decision = on_notice("theirs", "ours", busy=True)
    assert decision.close_window and decision.read_tip
    idle = on_notice("theirs", "ours", busy=False)
    assert not idle.close_window and idle.read_tip


def test_a_notice_without_after_is_still_a_reason_to_look() -> None:
    assert on_notice("", "ours", busy=True) == on_notice("x", "ours", busy=True)


@given(st.text(max_size=3), st.one_of(st.none(), st.text(max_size=3)), st.booleans())
def test_a_notice_never_closes_an_idle_branch_window(
    after: str, observed: str | None, busy: bool
) -> None:
    decision = on_notice(after, observed, busy)
    assert not decision.close_window or busy
    assert decision.read_tip or after == observed


def test_steady_tick() -> None:
    assert steady_tick_due(0.0, 60.0, 60.0, busy=False)
    assert not steady_tick_due(0.0, 59.9, 60.0, busy=False)
    assert not steady_tick_due(0.0, 120.0, 60.0, busy=True)


def test_a_wake_s_notices_make_one_decision() -> None:
    """C4: a burst is one decision: close once if any closes, read once if any reads."""
    burst = on_notices(["ours", "x", "y", "ours"], "ours", busy=True)
    assert burst == NoticeDecision(close_window=True, read_tip=True)
    assert on_notices(["ours", "ours"], "ours", busy=True) == NoticeDecision(False, False)
    assert on_notices([], "ours", busy=True) == NoticeDecision(False, False)


@given(st.lists(st.text(max_size=2), max_size=6), st.one_of(st.none(), st.text(max_size=2)))
def test_one_decision_is_the_union_of_each_notice_s(
    afters: list[str], observed: str | None
) -> None:
    each = [on_notice(after, observed, True) for after in afters]
    whole = on_notices(afters, observed, True)
    assert whole.read_tip == any(d.read_tip for d in each)
    assert whole.close_window == any(d.close_window for d in each)


def test_remote_trusted_while_the_receiver_delivered_within_the_age() -> None:
    """P14: trusted while the last delivery is younger than the age; never without one, and
    never with the age 0 (the steady tick always reads, Q7)."""
    assert remote_trusted(1000.0, 1599.0, 600.0)
    assert not remote_trusted(1000.0, 1600.0, 600.0)
    assert not remote_trusted(None, 1000.0, 600.0)
    assert not remote_trusted(1000.0, 1000.0, 0.0)
    assert remote_trusted(1010.0, 1000.0, 600.0), "a receiver's clock ahead counts as now"
