"""What a push notice or a tip read means for a branch (Q5, Q6, Q7).

A notice is a hint: it can close an open window so that pending writes are published before a
foreign commit is applied (Q6), but only the ref advertisement says what the tip is (Q5). A
tip that is neither the one last observed nor one we pushed is a foreign commit. Without any
webhook, an idle branch reads its tip on a steady tick (Q7), unless its receiver has
delivered recently (P14). The branch's very first owner has
no tip observed before it: what it owes for the tip it finds depends on what each applier last
applied (``first_start_owes``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum


class TipKind(Enum):
    """How a tip read from the remote relates to what the branch knows."""

    UNCHANGED = "unchanged"
    OURS = "ours"
    FOREIGN = "foreign"
    GONE = "gone"


def classify_tip(tip: str | None, observed: str | None, ours: Collection[str]) -> TipKind:
    """Q5: unchanged, one of our pushes, a foreign commit, or a branch that vanished."""
    if tip is None:
        return TipKind.GONE if observed else TipKind.UNCHANGED
    if tip == observed:
        return TipKind.UNCHANGED
    if tip in ours:
        return TipKind.OURS
    return TipKind.FOREIGN


@dataclass(frozen=True, slots=True)
class NoticeDecision:
    """What the owner does with a notice, after any push in flight has finished."""

    close_window: bool
    read_tip: bool


def on_notice(after: str, observed: str | None, busy: bool) -> NoticeDecision:
    """Q6: the late webhook of our own push leaves an open window alone; any other closes it.

    ``after`` is the notice's claimed tip (a hint), ``observed`` the last tip read or pushed.
    The tip is read whenever the notice does not name what we already observed.
    """
    names_observed = bool(after) and after == observed
    if names_observed:
        return NoticeDecision(close_window=False, read_tip=False)
    return NoticeDecision(close_window=busy, read_tip=True)


def on_notices(afters: Sequence[str], observed: str | None, busy: bool) -> NoticeDecision:
    """C4: every notice a wake found, as one decision: the window closes once if any notice
    would close it, and the tip is read once if any notice asks for a read. A burst of
    deliveries costs one ``ls-remote``, not one each (the tip read answers for all of them)."""
    decisions = [on_notice(after, observed, busy) for after in afters]
    return NoticeDecision(
        close_window=any(d.close_window for d in decisions),
        read_tip=any(d.read_tip for d in decisions),
    )


def steady_tick_due(last_read_at: float, now: float, tick: float, busy: bool) -> bool:
    """Q7: an idle branch reads its tip every ``tick`` seconds even with no notice."""
    return not busy and now - last_read_at >= tick


def remote_trusted(delivered_at: float | None, now: float, max_age: float) -> bool:
    """P14: an idle branch trusts its view of the remote (and reads no tip on the steady
    tick) while a receiver (its GitProvider's, or another GitProvider's for the same
    repository) has delivered for its repository within ``max_age`` seconds: a push would
    have come as a notice. Without a delivery on record, or with ``max_age`` 0, the
    steady tick stays (Q7). A delivery time ahead of ``now`` (clocks apart) counts as now."""
    return delivered_at is not None and max_age > 0 and now - delivered_at < max_age


def first_start_owes(tip: str | None, applied: str | None) -> bool:
    """Q5, A1 at the branch's very first start (no owner before it, nothing observed): an
    applier owes a ForeignCommit for the tip exactly when the commit it last applied is not
    the tip. ``applied`` is that commit, "" or None when the applier records none (a webhook
    applier, an applier that never applied, or one that could not be read): then it is owed,
    since an outside push made before the first start would otherwise never be applied (issue
    23). An install whose appliers already hold the tip owes nothing, and sends nothing."""
    return bool(tip) and applied != tip
