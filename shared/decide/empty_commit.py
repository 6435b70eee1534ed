"""``onRefusal: PushEmptyCommit`` (P11): an empty commit moves the branch so that whatever
reconciler watches it applies the folder again and reverts the refused edit.

For a GitTarget that names no applier (``spec.applier`` absent: the product cannot ask anyone)
and has not been suspended. A refused edit makes the GitTarget owed a commit, and the owner
decides here when to push one:

- only when the folder holds a file for every refused object of the GitTarget (an apply of the
  folder reverts only what it holds; an object without a file would stay as refused, and a
  reconciler that prunes could remove it): a refusal of an object without a file makes the
  GitTarget wait for nothing until our next push;
- coalesced: one empty commit serves every owed GitTarget of the branch, and any new tip
  (our push of writes, an outside push) moves the branch anyway, so it settles what is owed;
- on a quiet branch only (Q4's reason: a reconciler that applies the folder while an API edit
  is still unpublished applies Git's older value over it; once the pending writes are pushed
  their commit moves the branch and nothing more is owed);
- rate-limited: at most one empty commit per ``MIN_INTERVAL_S`` per branch, so a refusal that
  comes back after every apply cannot make a commit storm.

The owner keeps this state in memory: a crash forgets what was owed (the refusal still shows
as ``GitPathAccepted=False``, and the next refused edit owes again), and never pushes twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from shared.model.config import TargetConfig

#: The shortest time between two empty commits on one branch.
MIN_INTERVAL_S = 60.0
#: The value of ``spec.onRefusal`` this rule serves.
PUSH_EMPTY_COMMIT = "PushEmptyCommit"


def asks_empty_commit(target: TargetConfig) -> bool:
    """The GitTarget wants an empty commit for its refused edits now. One that signs its
    commits (``spec.commit.signing``) is not given an unsigned one: it waits for its next
    commit of its own."""
    return (
        target.on_refusal == PUSH_EMPTY_COMMIT
        and target.applier is None
        and not target.suspended
        and not target.signing_secret
    )


@dataclass(frozen=True, slots=True)
class EmptyCommits:
    """What one branch owes in empty commits."""

    #: GitTarget uids with a refused edit no commit of ours has followed yet.
    owed: frozenset[str] = frozenset()
    #: Of those, the ones with a refused object that has no file in the folder.
    unfiled: frozenset[str] = frozenset()
    #: When the last empty commit was pushed (the rate limit).
    last_at: float | None = None
    #: The tip the owner built on when the first refusal now owed was noted.
    tip: str | None = None


@dataclass(frozen=True, slots=True)
class PushEmpty:
    """Push one empty commit now, for these GitTargets."""

    uids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Settle:
    """The branch moved since the refusals: nothing is owed any more."""


@dataclass(frozen=True, slots=True)
class Hold:
    """Nothing now; look again at ``until`` (None: when something changes)."""

    until: float | None = None


def owe(state: EmptyCommits, uid: str, filed: bool, tip: str | None) -> EmptyCommits:
    """A refused edit of GitTarget ``uid`` while the owner builds on ``tip``; ``filed``: the
    folder holds a file for the object."""
    unfiled = state.unfiled if filed else state.unfiled | {uid}
    at = state.tip if state.owed else tip
    return replace(state, owed=state.owed | {uid}, unfiled=unfiled, tip=at)


def settled(state: EmptyCommits) -> EmptyCommits:
    """The branch moved (our push, someone else's): it moved for everything owed."""
    return replace(state, owed=frozenset(), unfiled=frozenset(), tip=None)


def emptied(state: EmptyCommits, now: float) -> EmptyCommits:
    """The empty commit was pushed at ``now``."""
    return EmptyCommits(last_at=now)


def decide(
    state: EmptyCommits, *, asking: Iterable[str], quiet: bool, now: float, tip: str | None
) -> PushEmpty | Settle | Hold:
    """Whether to push an empty commit now, the owner building on ``tip``. ``asking``: the
    branch's GitTargets that ask for one as they are configured now (``asks_empty_commit``); a
    GitTarget that stopped asking (suspended, consent withdrawn, an applier named) is owed
    nothing."""
    if state.owed and tip != state.tip:
        return Settle()
    eligible = sorted((state.owed - state.unfiled) & frozenset(asking))
    if not eligible or not quiet:
        return Hold()
    if state.last_at is not None and now < state.last_at + MIN_INTERVAL_S:
        return Hold(state.last_at + MIN_INTERVAL_S)
    return PushEmpty(tuple(eligible))
