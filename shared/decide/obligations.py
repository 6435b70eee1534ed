"""What an applier is owed, when it may be asked, and what an outcome does (A1-A5).

The applier owns its obligations and retries: a ForeignCommit (the latest commit we did not
write), Refusals (the GitTarget uids whose refused edits should be reverted), for Flux a
CatchUp after our own pushes (never for an Argo CD Application), and for an Application a Repair
after the apply window withheld its revert of an API edit (W1). One attempt is out at a time;
everything owed goes out as one request, on a quiet branch, at the tip as it is then.

Why a Repair and not a CatchUp for an Application (A1, W1): W1 has Git keep the API edit and a
sync apply it back; for Flux that sync is the CatchUp the edit's push owes anyway. An
Application is never owed a CatchUp (A1: with automated sync off nothing it holds goes stale,
and ``quietPeriod`` is refused with an ``applicationRef``), so reusing CatchUp would break A1 for
every push to repair the rare collision. A Repair is owed only by a withheld collision, to the
GitTarget whose folder it hit, and asks one sync of the tip: the same request as a
ForeignCommit's (D5/D6), at our own commit. It needs no consent (S1 is about reverting an edit
we refused; a Repair applies what we wrote). It waits until the colliding apply's window has
closed (``AFTER_FINISH_S`` after that attempt ended), so every trailing revert of that apply is
judged against its own window, not against the Repair's, and it rides along at once with any
other reason, which syncs the same tip.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from shared.decide.apply_window import AFTER_FINISH_S
from shared.decide.quiet import BranchView, is_quiet
from shared.model.appliers import Applier, Attempt, Outcome, Reason, catches_up, gets_repairs
from shared.model.defaults import QUIET_PERIOD_S
from shared.model.requests import AttemptOutcome

#: Backoff of a failed request: base doubles per failure, capped (A4).
BACKOFF_BASE_S = 5.0
BACKOFF_CAP_S = 300.0


def owe_foreign_commit(applier: Applier, commit: str, uids: Iterable[str]) -> Applier:
    """Q5/A1: a foreign commit is owed to every GitTarget naming the applier on the branch."""
    return replace(applier, foreign_commit=commit, foreign_uids=frozenset(uids))


def owe_catch_up(applier: Applier, commit: str, uids: Iterable[str]) -> Applier:
    """A1: after our own push, a Kustomization owes a CatchUp (an Application or a webhook
    never does: ``catches_up``)."""
    if not catches_up(applier.kind):
        return applier
    return replace(applier, catch_up=commit, catch_up_uids=frozenset(uids))


def owe_refusal(applier: Applier, uid: str, consents: bool) -> Applier:
    """A5: a Refusal is owed only while the GitTarget consents (onRefusal: Reapply).

    A GitTarget refused again while an attempt carrying its Refusal is out is remembered
    apart: the applier may have applied before this edit, so that attempt's Delivered must
    leave it owed (A4 clears only what the request covered)."""
    if not consents:
        return applier
    attempt = applier.attempt
    again = applier.refused_again
    if attempt is not None and uid in attempt.reasons.get("Refusal", frozenset()):
        again = again | {uid}
    return replace(applier, refusals=applier.refusals | {uid}, refused_again=again)


def owe_repair(applier: Applier, uid: str, now: float) -> Applier:
    """W1, A1: the apply window withheld this applier's revert of an API edit in GitTarget
    ``uid``'s folder, at ``now``: an Application owes that GitTarget one sync of the tip (a
    Kustomization is repaired by the CatchUp the edit's push owes; ``gets_repairs``).

    It goes out no earlier than ``AFTER_FINISH_S`` from now (the colliding apply's window, which
    ends at most that long after now; while that attempt is out, its outcome pushes this
    further, ``on_outcome``). A collision while an attempt carrying this GitTarget's Repair is
    out is remembered apart: that sync was the revert, so its Delivered must leave it owed."""
    if not gets_repairs(applier.kind):
        return applier
    attempt = applier.attempt
    again = applier.repaired_again
    if attempt is not None and uid in attempt.reasons.get("Repair", frozenset()):
        again = again | {uid}
    return replace(
        applier,
        repairs=applier.repairs | {uid},
        repaired_again=again,
        repair_at=max(applier.repair_at, now + AFTER_FINISH_S),
    )


def cancel_refusal(applier: Applier, uid: str) -> Applier:
    """A5: a GitTarget that recovered or withdrew consent cancels its own Refusal."""
    return replace(
        applier, refusals=applier.refusals - {uid}, refused_again=applier.refused_again - {uid}
    )


def keep_consented(applier: Applier, refusing: Iterable[str]) -> Applier:
    """S1/A5 at the decision: a Refusal stays owed only to the GitTargets in ``refusing``,
    those that still consent (``onRefusal: Reapply``) and whose refusal still stands; the
    others' are dropped without being sent. The attempt out keeps its own reasons: the
    dispatcher checks consent again before it asks (D2)."""
    return replace(applier, refusals=applier.refusals & frozenset(refusing))


def keep_live(applier: Applier, live: Iterable[str]) -> Applier:
    """A5: obligations owed to GitTarget incarnations that are gone are dropped."""
    alive = frozenset(live)
    return replace(
        applier,
        foreign_uids=applier.foreign_uids & alive,
        refusals=applier.refusals & alive,
        refused_again=applier.refused_again & alive,
        catch_up_uids=applier.catch_up_uids & alive,
        repairs=applier.repairs & alive,
        repaired_again=applier.repaired_again & alive,
        quiet_periods={u: p for u, p in applier.quiet_periods.items() if u in alive},
    )


def catch_up_period(applier: Applier) -> float:
    """A3: a shared Kustomization waits the longest quietPeriod of the GitTargets naming it.

    A uid without a published period (a record written before its GitTarget's) waits the
    CRD's default rather than not at all.
    """
    periods = [applier.quiet_periods.get(u, QUIET_PERIOD_S) for u in applier.catch_up_uids]
    return max(periods, default=QUIET_PERIOD_S)


@dataclass(frozen=True, slots=True)
class Ask:
    """Send this request now."""

    commit: str
    reasons: Mapping[Reason, frozenset[str]]


@dataclass(frozen=True, slots=True)
class Wait:
    """Do not ask yet; look again at ``until`` (None: when something changes)."""

    why: str
    until: float | None = None


def decide(applier: Applier, branch: BranchView, now: float) -> Ask | Wait:
    """A2-A3, Q4: what to send now, if anything."""
    owed = applier.owes()
    if not owed:
        return Wait("nothing owed")
    if applier.attempt is not None:
        return Wait("an attempt is out", applier.attempt.deadline)
    if not is_quiet(branch) or branch.tip is None:
        return Wait("the branch is busy")
    if now < applier.next_try_at:
        return Wait("backing off", applier.next_try_at)
    if set(owed) == {"CatchUp"}:
        ready_at = branch.last_write_at + catch_up_period(applier)
        if now < ready_at:
            return Wait("quiet period", ready_at)
    if set(owed) == {"Repair"} and now < applier.repair_at:
        return Wait("apply window", applier.repair_at)  # W1: the colliding apply's window
    # With another reason the request goes out now at the tip, and the tip holds our pushes:
    # the CatchUp or Repair rides along instead of waiting (that sync applies the tip either way).
    return Ask(branch.tip, owed)


def sent(applier: Applier, ask: Ask, token: str, now: float, deadline_s: float) -> Applier:
    """Record the attempt out (one at a time, A2), handed back ``deadline_s`` later (A4).

    ``deadline_s`` is the process setting ``attempt_deadline``, passed in rather than restated.

    The request applies the tip it was decided at, which holds every commit owed before it
    (Q4), so the ForeignCommit and CatchUp it covers are owed at that commit from now on: its
    Delivered clears them, and only a commit that arrives while it is out stays owed.
    """
    attempt = Attempt(token, ask.commit, ask.reasons, now, now + deadline_s)
    foreign = ask.commit if "ForeignCommit" in ask.reasons else applier.foreign_commit
    catch_up = ask.commit if "CatchUp" in ask.reasons else applier.catch_up
    return replace(applier, attempt=attempt, foreign_commit=foreign, catch_up=catch_up)


def on_outcome(
    applier: Applier, token: str, outcome: Outcome, now: float, dropped: Iterable[Reason] = ()
) -> Applier:
    """A4: what an outcome does to the applier. Outcomes for another token change nothing."""
    attempt = applier.attempt
    if attempt is None or attempt.token != token:
        return applier
    cleared = replace(applier, attempt=None, refused_again=frozenset(), repaired_again=frozenset())
    if applier.repairs:  # W1: a Repair owed waits out this apply's window (owe_repair)
        cleared = replace(cleared, repair_at=max(applier.repair_at, now + AFTER_FINISH_S))
    if outcome == "Stale":
        return cleared  # decided again at the next quiet moment, no backoff
    if outcome == "Failed":
        failures = applier.failures + 1
        delay = min(BACKOFF_BASE_S * 2 ** (failures - 1), BACKOFF_CAP_S)
        return replace(cleared, failures=failures, next_try_at=now + delay)
    covered = dropped if outcome == "NothingToAsk" else attempt.reasons
    again = (applier.refused_again, applier.repaired_again)
    return _clear(replace(cleared, failures=0, next_try_at=0.0), attempt, covered, again)


def _clear(
    applier: Applier,
    attempt: Attempt,
    reasons: Iterable[Reason],
    again: tuple[frozenset[str], frozenset[str]],
) -> Applier:
    """Clear what the attempt covered; ``again``: the GitTargets refused again, and those with
    another collision, while it was out (their Refusal or Repair stays owed)."""
    refused_again, repaired_again = again
    for reason in reasons:
        if reason == "ForeignCommit" and applier.foreign_commit == attempt.commit:
            applier = replace(applier, foreign_commit=None, foreign_uids=frozenset())
        elif reason == "CatchUp" and applier.catch_up == attempt.commit:
            applier = replace(applier, catch_up=None, catch_up_uids=frozenset())
        elif reason == "Refusal":
            held = attempt.reasons.get("Refusal", frozenset())
            kept = held & refused_again
            applier = replace(applier, refusals=applier.refusals - (held - kept))
        elif reason == "Repair":
            held = attempt.reasons.get("Repair", frozenset())
            kept = held & repaired_again
            applier = replace(applier, repairs=applier.repairs - (held - kept))
    return applier


def hand_back_if_overdue(applier: Applier, now: float) -> Applier:
    """A4: an attempt whose outcome never came (a dispatcher died) counts as Failed."""
    attempt = applier.attempt
    if attempt is None or now < attempt.deadline:
        return applier
    return on_outcome(applier, attempt.token, "Failed", now)


def consider(
    applier: Applier,
    *,
    periods: Mapping[str, float],
    refusing: Iterable[str],
    branch: BranchView,
    now: float,
    token: str,
    deadline_s: float,
) -> tuple[Applier, Ask | Wait]:
    """One wake of the branch's owner for one applier (A2-A5, S1): hand back an overdue
    attempt, keep only the GitTargets still naming it (``periods``: uid -> its quietPeriod)
    and the Refusals of those still ``refusing`` (consenting, with a refusal standing), decide,
    and record the attempt when the decision is to ask, under ``token``.

    A GitTarget whose Refusal is dropped here keeps what else it is owed: a CatchUp that rode
    along with the Refusal now waits its own quiet period, as it would have alone."""
    live = keep_consented(keep_live(applier, periods), refusing)
    applier = replace(hand_back_if_overdue(live, now), quiet_periods=dict(periods))
    decision = decide(applier, branch, now)
    if isinstance(decision, Ask):
        return sent(applier, decision, token, now, deadline_s), decision
    return applier, decision


def on_outcomes(applier: Applier, outcomes: Iterable[AttemptOutcome], now: float) -> Applier:
    """A4 for a batch: each outcome in the order it arrived, so a wake needs one transaction
    per applier instead of one per (applier, outcome)."""
    for reported in outcomes:
        applier = on_outcome(applier, reported.token, reported.outcome, now, reported.dropped)
    return applier
