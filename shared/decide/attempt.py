"""One apply attempt, decided purely (D2, D4, D6).

The dispatcher gathers facts (the GitTargets as they are now, the branch and the applier) and
these functions say what to do with them: which reasons still have a holder (D2; a reason
without one is not asked, and nothing weaker is asked instead), which Flux object to stamp
(D4), when the applier has finished (D6), and how long a busy applier is waited for (D5; the
Argo CD operation itself is ``shared.decide.argo``). Whether the request is stale (D3) is a rule of
the branch's quietness, ``shared.decide.quiet.stale_reason``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from shared.model.appliers import Reason


@dataclass(frozen=True, slots=True)
class TargetFacts:
    """What an attempt needs to know of one GitTarget named by the request, read just now."""

    uid: str
    exists: bool  # the same incarnation (uid) still exists
    names_applier: bool  # spec.applier still names this applier
    on_branch: bool  # its GitProvider's repository and its branch are the request's
    admitted: bool  # the applier's ClusterProvider admits its namespace (and, T2, allows an
    #: applier in another namespace for it)
    consents: bool  # spec.onRefusal: Reapply (S1)
    suspended: bool = False  # spec.suspend (P7): a suspended GitTarget holds no reason


@dataclass(frozen=True, slots=True)
class Holders:
    """The reasons that still have holders, and those that lost all of them."""

    kept: dict[Reason, list[str]]
    dropped: list[Reason]


def holders(reasons: Mapping[Reason, Iterable[str]], facts: Mapping[str, TargetFacts]) -> Holders:
    """D2: keep each reason's GitTargets that still hold it."""
    kept: dict[Reason, list[str]] = {}
    dropped: list[Reason] = []
    for reason, uids in reasons.items():
        still = [u for u in uids if _holds(facts.get(u), reason)]
        if still:
            kept[reason] = sorted(still)
        else:
            dropped.append(reason)
    return Holders(kept, dropped)


def _holds(fact: TargetFacts | None, reason: Reason) -> bool:
    if (
        fact is None
        or fact.suspended
        or not (fact.exists and fact.names_applier and fact.on_branch and fact.admitted)
    ):
        return False
    return fact.consents if reason == "Refusal" else True


def revision_commit(revision: str) -> str:
    """The commit of a Flux artifact revision ``[<ref>@]<algo>:<hex>`` (facts F2)."""
    _, _, digest = revision.rpartition("@")
    return digest.partition(":")[2] if ":" in digest else digest


def flux_applied(kustomization: Mapping[str, object]) -> str:
    """The commit a Kustomization last applied (``status.lastAppliedRevision``, facts F2),
    "" when it has applied none."""
    status = kustomization.get("status")
    revision = status.get("lastAppliedRevision") if isinstance(status, Mapping) else None
    return revision_commit(revision) if isinstance(revision, str) else ""


Plan = Literal["stamp-source", "stamp-kustomization", "nothing"]


def flux_plan(reasons: Iterable[Reason], artifact_revision: str, commit: str) -> Plan:
    """D4: stamp the GitRepository when its artifact lacks the commit; else only a Refusal
    stamps the Kustomization (to revert drift at an unchanged commit). Never both."""
    if revision_commit(artifact_revision) != commit:
        return "stamp-source"
    return "stamp-kustomization" if "Refusal" in set(reasons) else "nothing"


@dataclass(frozen=True, slots=True)
class SourceView:
    """The GitRepository as D6 reads it while a source stamp waits (facts F1, F2)."""

    handled_at: str  # status.lastHandledReconcileAt
    revision: str  # status.artifact.revision ("" when there is none)
    ready: str  # the status of its Ready condition
    current: bool  # not suspended, and status.observedGeneration == metadata.generation


def holding_revision(stamp: str, source: SourceView, *, fetched: bool) -> str:
    """D6: the source's artifact revision once it is known to hold the commit, else "".

    The commit was the branch's tip when the attempt checked it (D3), before the stamp. A
    reconcile of the GitRepository that carries our stamp in ``lastHandledReconcileAt`` read
    the object after the stamp was written (the token is copied from the object the reconcile
    read, facts F1), so the Git fetch it made came after the commit was on the branch; when it
    ended ``Ready`` True it stored the branch's head at that moment as its artifact, and that
    head is our commit or a descendant of it: we never force (M7). So the artifact holds the
    commit, even when an outside push made it newer and its revision names another commit.

    What does not count: a reconcile that failed (``Ready`` False keeps the older artifact),
    a stamp not handled yet (the artifact is from a fetch before it), and a suspended source
    (its reconcile copies the token and fetches nothing, F1); a suspended or changed spec
    leaves ``observedGeneration`` behind, which ``current`` reports. Once one read proved it
    (``fetched``, kept by the caller for the rest of the attempt), every later artifact comes
    from a later fetch and holds the commit too, even after another stamp (a Flux Receiver's,
    another Kustomization's attempt on the same source) replaced ours.

    A foreign force push that removed the commit from the branch breaks the premise: the
    artifact then holds the branch as the force push left it, without our commit, and the
    request counts as handled once that was applied (the commit is no longer the branch's, so
    no apply could hold it; the branch worker sees the rewritten history on its next fetch).
    """
    proved = source.handled_at == stamp and source.ready == "True" and source.current
    return source.revision if fetched or proved else ""


def flux_handled(
    plan: Plan,
    stamp: str,
    commit: str,
    handled_at: str,
    attempted_revision: str,
    *,
    ready: str,
    holding: str = "",
) -> bool:
    """D6: the Kustomization finished our request.

    A Kustomization stamp is handled when ``lastHandledReconcileAt`` carries it (written at the
    end of the reconcile, facts F1). A source stamp is handled when the Kustomization attempted
    a revision that holds the commit *and* the reconcile that attempted it ended: ``ready`` (its
    ``Ready`` condition's status) is no longer ``Unknown``. A revision holds the commit when it
    is the commit's own, or when it is ``holding``: the source's artifact revision once the
    source fetched after our stamp (``holding_revision``; an outside push between the check
    and the fetch makes it a newer commit, which the Kustomization applies instead of ours, F3:
    it always applies the source's current artifact). ``lastAttemptedRevision`` is written
    before the build and apply (facts F3: "set once the artifact is downloaded and the path
    exists, *before* build and apply", with ``Ready`` Unknown/``Progressing`` while it runs),
    so the attempted revision alone would report the request finished while Flux is still
    applying it, and the apply window (W1) would close under the apply.
    """
    if plan == "stamp-kustomization":
        return handled_at == stamp
    if plan == "stamp-source":
        if ready not in ("True", "False"):
            return False
        exact = revision_commit(attempted_revision) == commit
        return exact or (holding != "" and attempted_revision == holding)
    return True


#: Conflicts (409) in one attempt after which it fails instead of reading again (D5).
MAX_CONFLICTS = 5
BusyStep = Literal["read-now", "pause", "give-up"]


def after_busy(conflict: bool, conflicts: int, now: float, deadline: float) -> BusyStep:
    """D5: what an attempt does when the applier was busy.

    A write that lost a race (``conflict``, the ``conflicts``-th of this attempt) is read again
    at once, at most ``MAX_CONFLICTS`` times; a running operation is read again after a pause,
    until the attempt's deadline (the same one D6's wait has, so one attempt never outlives
    it). Either way the attempt decides again from what it reads, never replacing anything.
    """
    if conflict:
        return "read-now" if conflicts <= MAX_CONFLICTS else "give-up"
    return "pause" if now < deadline else "give-up"


#: How long one attempt waits for the watches feeding its branch to publish what the API lists
#: before it is Stale (D3, issue 11): long enough that a watcher restarting or catching up from
#: its cursor is waited out inside one attempt, well inside D6's 300 s so a stamp after the
#: wait still has time to be handled, and short of the worker's attempt deadline (330 s).
WATCH_WAIT_S = 60.0
BehindStep = Literal["pause", "stale"]


def watch_wait(attempt_deadline_s: float) -> float:
    """How long an attempt waits for watches behind: ``WATCH_WAIT_S``, or half the owner's
    attempt deadline when that is shorter (a test's), so the wait always ends before the
    owner hands the attempt back and sends another beside it (A2, A4)."""
    return min(WATCH_WAIT_S, attempt_deadline_s / 2)


def after_behind(since: float, now: float, wait_s: float, deadline: float) -> BehindStep:
    """D3, A4: what an attempt does when the watches feeding the branch are behind the API.

    It reads again after a pause (the API's list against what the watches published, then
    the branch and the tip) until ``wait_s`` after ``since`` (when it first found them
    behind) or the attempt's ``deadline``, then it is Stale. Answering Stale at once would be
    re-sent at once (Stale has no backoff, A4), so a watcher that is down would cost an
    attempt, an ``ls-remote`` and a list per watch on every wake of the branch's owner; waiting
    here costs one list per watch per pause and adds no backoff to Stale.
    """
    return "pause" if now < min(since + wait_s, deadline) else "stale"
