"""Quietness (Q3) written once, and the dispatcher's staleness check built on it (D3)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from shared.decide.quiet import BranchView, busy_reasons, is_quiet, stale_reason

TIP = "a" * 40
QUIET = BranchView(
    tip=TIP, windows_open=0, pending_total=0, push_in_flight=False, last_write_at=5.0
)

views = st.builds(
    BranchView,
    tip=st.none() | st.just(TIP),
    windows_open=st.integers(0, 3),
    pending_total=st.integers(0, 3),
    push_in_flight=st.booleans(),
    last_write_at=st.floats(0, 1e9),
)


def test_a_branch_with_nothing_open_pending_or_in_flight_is_quiet() -> None:
    assert is_quiet(QUIET)
    assert busy_reasons(QUIET) == ()


def test_each_busy_fact_is_named() -> None:
    """Q3: a window open, a write pending on any worker, a push in flight: each keeps it busy."""
    assert busy_reasons(replace(QUIET, windows_open=2)) == ("2 window(s) open",)
    assert busy_reasons(replace(QUIET, pending_total=3)) == ("3 write(s) pending",)
    assert busy_reasons(replace(QUIET, push_in_flight=True)) == ("a push in flight",)
    busy = replace(QUIET, windows_open=1, pending_total=1, push_in_flight=True)
    assert busy_reasons(busy) == ("1 window(s) open", "1 write(s) pending", "a push in flight")


@given(views)
def test_quiet_exactly_when_no_reason_to_be_busy(view: BranchView) -> None:
    assert is_quiet(view) == (busy_reasons(view) == ())
    assert is_quiet(view) == (
        view.windows_open == 0 and view.pending_total == 0 and not view.push_in_flight
    )


def test_a_request_at_the_tip_of_a_quiet_branch_may_be_stamped() -> None:
    assert stale_reason(TIP, TIP, QUIET) is None


def test_a_request_is_stale_once_the_tip_moved() -> None:
    """D3: the tip read just now is not the commit the request was decided at."""
    assert stale_reason(TIP, "b" * 40, QUIET) == f"the branch tip moved to {'b' * 40}"
    assert stale_reason(TIP, None, QUIET) == "the branch tip moved to nothing"


def test_a_request_is_stale_while_writes_are_on_their_way() -> None:
    """D3 with Q3: a pending write will move the tip again, so stamping now is wasted."""
    why = stale_reason(TIP, TIP, replace(QUIET, pending_total=2))
    assert why == "writes are pending on the branch: 2 write(s) pending"


@given(views, st.none() | st.just(TIP) | st.just("b" * 40))
def test_stale_reason_is_none_only_at_the_commit_on_a_quiet_branch(
    view: BranchView, tip: str | None
) -> None:
    assert (stale_reason(TIP, tip, view) is None) == (tip == TIP and is_quiet(view))


@given(views, st.just("b" * 40))
def test_a_moved_tip_is_reported_before_pending_writes(view: BranchView, tip: str) -> None:
    """The moved tip is the stronger reason: the request would be stale even once quiet."""
    assert stale_reason(TIP, tip, view) == f"the branch tip moved to {tip}"
