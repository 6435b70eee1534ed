"""The apply window (W1-W2): is this object event the applier reverting an API edit?

An applier applies the commit it was asked for a few seconds after the stamp. An API edit made
in those seconds, to a field the applier applies, is reverted by the apply; mirroring that
revert would write the applier's value over the edit in Git, so the edit would survive only in
history (the seed's "An apply runs a few seconds after its stamp"). The API value wins (M5), so
such a revert is *withheld*: not mirrored. Git keeps the edit, and the CatchUp its push owes
applies it back (an Argo CD Application, owed no CatchUp, is owed a Repair:
``obligations.owe_repair``).

Only proof withholds (W2). An event is withheld when all of these hold:

- it is not a DELETE;
- it changes a value: Git (the branch's tip with the pending writes) does not already hold the
  object as the event has it (``unchanged``, which the caller reads from its work tree). A
  write that changes no value reverts nothing: an apply of a tip that already holds the API
  edit, or an applier taking ownership of a field without changing its value (Flux merges the
  ``kubectl`` entries into its own before it applies). Such a write also says nothing about
  *when* it was made: its manager's ``managedFields`` time did not move (found by the outside
  checks of 2026-12-06: judged at that older second, against an older request, it was
  withheld and counted, and an Application was owed a needless Repair);
- the applier's request is out, or finished less than ``AFTER_FINISH_S`` ago (the window);
- the object is in the applier's folders (the caller passes the window of the applier the
  event's GitTarget names, or none);
- the newest ``managedFields`` entries (those sharing the newest time) all belong to that
  applier's own field managers;
- the API side edited the object after the request was sent (an edit seen later than
  ``sent_at``).

A newest time shared by the applier's manager and another manager (same second) is a *tie*:
the ``managedFields`` times alone cannot say whether the event's write is the API edit or the
applier's revert of it. Two facts decide it (W2):

- the watch's order: it delivers an object's writes in resourceVersion order, so when it
  delivered the write before this one (the watcher keeps each object's newest entries as it
  last saw them), the managers whose entry moved between the two are this write's
  (``writers_of``): the applier's alone is its revert, judged as any applier write (withheld in
  the window); another manager's is the edit, mirrored and no collision;
- the audit facts, when attribution is on: the fact of this very write (its uid and
  resourceVersion, the ``exact`` tier) names its user; the applier's own user is its revert
  (``applier_users``), any other user the edit.

Only a tie neither decides is mirrored, counted as ``ambiguous``, and its ``why`` names the
facts that were missing (unless it changes no value: then it is no revert, and no collision).

An applier can also apply an artifact *older* than the branch tip: it fetched its source
between two pushes (an outside push after ours, say), applied that older commit, and its write
carries a value Git held only before the tip. Mirroring it would commit the older value again
over the newer push: that push's value lost, a value written twice (M7; the safety suite's
"written twice", docs/safety.md). Such a write is withheld as ``historical`` when, in the
window, with no API edit since the request was sent, the newest entries are the applier's
alone (no tie) and the object equals what Git held at an older commit but not what the tip
holds (``older_only``, which the caller reads from the branch's history; ``asks_history`` says
when it matters, so the read is made only then; ``asks_change`` says the same of
``unchanged``). The request owed for the tip (the newer
push's ForeignCommit, or our push's CatchUp) applies the newer value.

Everything else is mirrored and is no collision. This module decides; it does no IO (the
branch worker reads the window and the edit times from the store, the history from its clone,
and acts).

The window is judged at the time of the applier's *write*, not at the time the branch worker
reads its event (``write_bound``, ``window_in_force``). The two differ when the event comes
late: the watcher was down, or Redis was, and the watch resumed from its cursor seconds later.
Judged at reading time, such a revert met a window already shut, or a newer request (sent
after the revert happened, often a Stale one decided while the watch was behind) whose
``sent_at`` came after the edit, and was mirrored: the soak's chaos-flux-1/cm-00178 (seed
197924, 2026-12-02), an API delete 0.12 s after a stamp whose apply re-created the object
while Redis was down. The write's time is bounded above by the applier's own ``managedFields``
time (API server clock, whole seconds: the write happened before that second ended), by when
the watcher observed it, and by now; the latest of these bounds that the window can use is
their minimum. The ``managedFields`` bound holds for a write that changes a value (the
manager's entry takes the write's second then); a write that changes none is mirrored before
any time is read. On the product's clock that never makes a window look open that was not (W2:
only proof withholds); the ``managedFields`` bound is the API server's clock, though, and an
API server whose clock is behind the product's by more than a second can make a write look
older than it is, judged against an older request whose window is still open (the caveat
docs/architecture.md states).

Not to be confused with ``shared.decide.window``, which is the *commit* window (M6).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from shared.model.appliers import KINDS, rules_of
from shared.model.events import ManagerEntry, Operation

#: W1: the window stays open this long after the applier finished, for the watch to deliver
#: the apply's events (they can trail the finish the dispatcher saw).
AFTER_FINISH_S = 10.0

#: Why a write that changes no value is mirrored (W2).
NO_CHANGE = "changes no value Git holds"


class Verdict(Enum):
    """What to do with one object event."""

    MIRROR = "mirror"  # mirror as usual; no collision
    WITHHELD = "withheld"  # W1: not mirrored; counted
    AMBIGUOUS = "ambiguous"  # W2: mirrored, but counted: a same-second tie
    HISTORICAL = "historical"  # W1: not mirrored; an older commit's content, counted


@dataclass(frozen=True, slots=True)
class ApplyWindow:
    """One applier's latest request as the window sees it: when it was sent, and when it
    finished (None while it is out)."""

    sent_at: float
    finished_at: float | None = None

    def open_at(self, now: float) -> bool:
        """W1: out, or finished less than ``AFTER_FINISH_S`` before ``now``."""
        if now < self.sent_at:
            return False
        return self.finished_at is None or now < self.finished_at + AFTER_FINISH_S


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict and why, for the log line and ``inspect``."""

    verdict: Verdict
    why: str

    @property
    def mirrored(self) -> bool:
        """Whether the event is mirrored (everything but a withheld or historical one)."""
        return self.verdict not in (Verdict.WITHHELD, Verdict.HISTORICAL)

    @property
    def collision(self) -> bool:
        """W3: whether the event is counted as a collision."""
        return self.verdict is not Verdict.MIRROR


def entry_time(text: str) -> float | None:
    """A ``managedFields`` time (RFC 3339, whole seconds) in epoch seconds; None when it does
    not parse."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return None if moment.tzinfo is None else moment.timestamp()


def write_bound(newest: Iterable[ManagerEntry], observed_at: float, now: float) -> float:
    """The latest moment the write behind an event can have happened: before the end of the
    second its newest ``managedFields`` entries name, before the watcher observed it, and
    before now (each bound alone holds; the tightest is used). The first holds only for a
    write that changed a value (a manager's entry keeps its older time when its write changed
    none); ``decide`` never withholds one that did not, so that is the only kind it bounds."""
    bounds = [now, observed_at]
    times = [t for t in (entry_time(e.time) for e in newest) if t is not None]
    if times:
        bounds.append(max(times) + 1.0)
    return min(bounds)


def window_in_force(windows: Iterable[ApplyWindow], at: float) -> ApplyWindow | None:
    """The applier's latest request sent by ``at`` (None: none was): the request whose apply a
    write made at ``at`` can be. A request sent later cannot have caused the write, so it
    must not hide the window the write belongs to."""
    sent = [w for w in windows if w.sent_at <= at]
    return max(sent, key=lambda w: w.sent_at, default=None)


#: Every field manager of every applier kind (W1; the kinds' table, ``KINDS``, names them).
ANY_APPLIER: frozenset[str] = frozenset().union(*(rules.managers for rules in KINDS.values()))


def may_be_withheld(operation: Operation, newest: Iterable[ManagerEntry]) -> bool:
    """Whether an event could be an applier's write that the window withholds, whatever the
    applier of its GitTarget: not a DELETE, and an applier among its newest entries (alone,
    or in a same-second tie a fact may decide was the applier's write, W2). Such an event
    must not replace the API edit before it where a stream coalesces (U1): if it is
    withheld, that edit is what Git must keep."""
    names = {entry.manager for entry in newest}
    return operation != "DELETE" and bool(names & ANY_APPLIER)


def managers_of(kind: str) -> frozenset[str]:
    """The field managers an applier of ``kind`` writes with (none for a webhook applier or a
    kind no release knows)."""
    rules = rules_of(kind)
    return frozenset() if rules is None else rules.managers


def applier_user(kind: str, username: str) -> bool:
    """Whether an audit fact's user is the applier's own: the service account its controller
    runs as, named as its field manager (``system:serviceaccount:<namespace>:<manager>``:
    Flux's kustomize-controller, Argo CD's argocd-application-controller). Any other user
    (a person, a pipeline, a tenant account an applier impersonates) is not known to be the
    applier, so its write counts as the edit, as a tie no fact decides does (W2)."""
    parts = username.split(":")
    if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"]:
        return False
    return parts[3] in managers_of(kind)


def is_api_edit(operation: Operation, newest: Iterable[ManagerEntry], kind: str) -> bool:
    """Whether an event is evidence of an API-side edit for an applier of ``kind``: any
    operation whose newest managers are not the applier's alone (a DELETE always is: the
    window never withholds one, and an object deleted by hand is an edit a re-create reverts)."""
    names = {entry.manager for entry in newest}
    if operation == "DELETE":
        return True
    return not names or not names <= managers_of(kind)


@dataclass(frozen=True, slots=True)
class Newest:
    """An object's newest ``managedFields`` entries as one watch event showed them: the
    object's uid, their time (RFC 3339, whole seconds) and their managers."""

    uid: str
    time: str
    managers: frozenset[str]

    @classmethod
    def of(cls, uid: str, newest: Iterable[ManagerEntry]) -> Newest | None:
        """From an event's newest entries (None: it has none with a time)."""
        entries = [e for e in newest if entry_time(e.time) is not None]
        if not entries:
            return None
        return cls(uid, entries[0].time, frozenset(e.manager for e in entries))


def writers_of(previous: Newest | None, current: Newest | None) -> frozenset[str] | None:
    """The managers that made the write behind ``current``, from the watch's order: the write
    the watch delivered just before it (``previous``, the same object) had the newest entries
    ``previous``; an entry that moved to the current newest second since was written now.
    None when the order cannot say: no previous write seen (a new watcher, a relist, another
    object under the name), the previous at an older second while two or more managers share
    this one (a write between them was not seen), or no entry moved (a manager wrote twice in
    the second)."""
    if previous is None or current is None or previous.uid != current.uid:
        return None
    then, now = entry_time(previous.time), entry_time(current.time)
    if then is None or now is None or then > now:
        return None
    if then < now:  # every newest entry moved this second: one write, or one unseen
        return current.managers if len(current.managers) == 1 else None
    moved = current.managers - previous.managers
    return moved or None


#: How a tie was decided, or why it was not (the ``why`` of its decision and its log line).
BY_ORDER = "the watch's order"
BY_AUDIT = "the audit fact of this write"
NO_ORDER = "the watch did not deliver the write before it"
NO_AUDIT = "no audit fact names this write"
NO_ATTRIBUTION = "attribution is off"
#: In the ``why`` of a tie a fact gave to the editor (mirrored, no collision).
EDIT_BY = "the edit, by"


def _tie(
    own: frozenset[str],
    others: frozenset[str],
    writers: frozenset[str] | None,
    audit_by_applier: bool | None,
    attribution: bool,
) -> Decision | None:
    """W2: a same-second tie decided by a fact (None: the applier wrote it, judge it as the
    applier's write), or mirrored as ambiguous with the facts that were missing."""
    names = ", ".join(sorted(others))
    if writers is not None and (writers <= own or not writers & own):
        if writers <= own:
            return None
        return Decision(Verdict.MIRROR, f"same-second tie with {names}: {EDIT_BY} {BY_ORDER}")
    if audit_by_applier is not None:
        if audit_by_applier:
            return None
        return Decision(Verdict.MIRROR, f"same-second tie with {names}: {EDIT_BY} {BY_AUDIT}")
    missing = [NO_ORDER, NO_AUDIT if attribution else NO_ATTRIBUTION]
    return Decision(
        Verdict.AMBIGUOUS, f"same-second tie with {names}; undecided: {'; '.join(missing)}"
    )


def decide(
    *,
    operation: Operation,
    newest: Iterable[ManagerEntry],
    applier_kind: str | None,
    window: ApplyWindow | None,
    api_edited_at: float | None,
    now: float,
    older_only: bool = False,
    unchanged: bool = False,
    writers: frozenset[str] | None = None,
    audit_by_applier: bool | None = None,
    attribution: bool = False,
) -> Decision:
    """W1-W2 for one event of an object in the folder of the applier of ``applier_kind``
    (None: the event's GitTarget names no applier).

    ``newest`` are the ``managedFields`` entries that share the newest time; ``window`` the
    applier's request in force when the write was made (``window_in_force``); ``api_edited_at``
    the last time an API-side edit of this object was seen (None: none seen); ``now`` the time
    the write is judged at (``write_bound``), not the time its event is read; ``older_only``
    whether the event's object equals what Git held at an older commit of the branch but not
    what its tip holds (the applier applied an older artifact; see the module's docstring);
    ``unchanged`` whether Git already holds the event's object as it is (the write changes no
    value, so it reverts nothing, W2). A tie (see the module) is decided by ``writers`` (the
    managers that made this write, by the watch's order: ``writers_of``; None when unknown) or
    ``audit_by_applier`` (whether the audit fact of this write names the applier's user; None
    when there is none), ``attribution`` saying whether such a fact could have come.
    """
    if operation == "DELETE":
        return Decision(Verdict.MIRROR, "a DELETE is never withheld")
    if unchanged:
        return Decision(Verdict.MIRROR, NO_CHANGE)
    if applier_kind is None or window is None or not window.open_at(now):
        return Decision(Verdict.MIRROR, "no apply window open")
    own = managers_of(applier_kind)
    names = {entry.manager for entry in newest}
    if not names & own:
        return Decision(Verdict.MIRROR, "not written by the applier")
    if api_edited_at is None or api_edited_at <= window.sent_at:
        if older_only and names <= own:
            return Decision(
                Verdict.HISTORICAL,
                f"{', '.join(sorted(names))} applied an older commit's content, not the tip's",
            )
        return Decision(Verdict.MIRROR, "no API edit since the request was sent")
    why = f"{', '.join(sorted(names))} reverted an API edit"
    if not names <= own:
        decided = _tie(own, frozenset(names - own), writers, audit_by_applier, attribution)
        if decided is not None:
            return decided
        by = BY_ORDER if writers is not None and writers <= own else BY_AUDIT
        why = f"{', '.join(sorted(names & own))} reverted an API edit (a same-second tie, by {by})"
    return Decision(Verdict.WITHHELD, why)


def asks_history(
    *,
    operation: Operation,
    newest: Iterable[ManagerEntry],
    applier_kind: str | None,
    window: ApplyWindow | None,
    api_edited_at: float | None,
    now: float,
) -> bool:
    """Whether ``decide``'s verdict for these inputs depends on ``older_only``: only then is
    the branch's history worth reading (an applier-only write inside an open window with no
    API edit since the request was sent)."""
    entries = tuple(newest)
    asked = decide(
        operation=operation,
        newest=entries,
        applier_kind=applier_kind,
        window=window,
        api_edited_at=api_edited_at,
        now=now,
        older_only=True,
    )
    return asked.verdict is Verdict.HISTORICAL


def asks_change(
    *,
    operation: Operation,
    newest: Iterable[ManagerEntry],
    applier_kind: str | None,
    window: ApplyWindow | None,
    api_edited_at: float | None,
    now: float,
    older_only: bool = False,
) -> bool:
    """Whether ``decide``'s verdict for these inputs depends on ``unchanged``: only for a
    collision (a write that changes no value is no collision), so the work tree is read only
    for an event the window would otherwise withhold or count."""
    return decide(
        operation=operation,
        newest=tuple(newest),
        applier_kind=applier_kind,
        window=window,
        api_edited_at=api_edited_at,
        now=now,
        older_only=older_only,
    ).collision
