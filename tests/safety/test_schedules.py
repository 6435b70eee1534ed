"""The safety suite: schedules of API edits, outside pushes, webhooks, Flux, crashes and lease
takeovers, searched by hypothesis over the real decision and store code (docs/safety.md).

``make test`` runs ``SAFETY_EXAMPLES`` (default 100) schedules; ``make safety`` runs 10,000.
``SAFETY_SEED`` fixes hypothesis's seed; a failure prints the seed, the shrunk list of choices
and the readable schedule (the world's log) it played.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import Phase, given, note, seed, settings
from hypothesis import strategies as st

import services.branch_worker.branch as branch_module
import services.branch_worker.worktree as worktree_module
import services.dispatcher.attempt as attempt_module
import services.dispatcher.mirrored as mirrored_module
import tests.safety.world as world_module
from services.branch_worker.pacing import RETRY_S
from services.dispatcher import jobs as dispatcher_jobs
from shared.decide.apply_window import Verdict
from shared.decide.attempt import Plan, revision_commit
from shared.model.ledger import LastRequest
from shared.store.branch_state import BranchState
from shared.store.streams import EventStream
from tests.safety.cluster import value_in
from tests.safety.schedule import cadence, run, run_named
from tests.safety.world import SETTINGS, Violation, World

EXAMPLES = int(os.environ.get("SAFETY_EXAMPLES", "100"))
SEED = int(os.environ.get("SAFETY_SEED", "20261201"))
#: Longest schedule drawn: a branch takes about fifteen interactions to start, a pass twenty.
LENGTH = 200

schedules = st.lists(st.integers(min_value=0, max_value=2**20), min_size=20, max_size=LENGTH)


def _play(choices: list[int]) -> World:
    world = World()
    try:
        run(choices, world)
    except Violation:
        note(f"SAFETY_SEED={SEED}; the schedule played:\n" + "\n".join(world.log))
        raise
    return world


#: pytest-timeout's limit for the search: the tier's 300 s fits ``make test``'s 100 schedules,
#: not ``make safety``'s 10,000 (about 0.2 s a schedule on a busy machine; 1 s allowed).
SEARCH_TIMEOUT_S = max(300, EXAMPLES)


@pytest.mark.timeout(SEARCH_TIMEOUT_S)
@seed(SEED)
@settings(max_examples=EXAMPLES, database=None, phases=[Phase.generate, Phase.shrink])
@given(schedules)
def test_every_schedule_keeps_the_invariants(choices: list[int]) -> None:
    """M7, M8, Q1, Q3, Q4, Q5, A2, A4, D1, D3: after every action no push was forced, no
    applier has two attempts out, no token two outcomes, no Stale a backoff, and no apply
    reverts an API edit made before its request was sent (still in the watcher, unread in the
    stream or seen: D3 catches each); after the schedule the cluster converges to the Git tip
    and Git holds every value once. Each schedule starts with no tip published, so the first
    start is in every one. Only the apply window's race (an edit after the request was sent,
    W1) is counted instead of failed."""
    _play(choices)


@pytest.mark.timeout(SEARCH_TIMEOUT_S)
@seed(SEED)
@settings(max_examples=EXAMPLES, database=None, phases=[Phase.generate])
@given(st.lists(st.integers(min_value=0, max_value=2**20), min_size=5, max_size=60))
def test_schedules_around_a_stamp(choices: list[int]) -> None:
    """W1-W2 searched where they matter: every schedule starts with the branch started and
    an outside push's request out and stamped (``WINDOW`` up to the stamp), then plays random
    actions (edits by kubectl and the console, Flux's fetch and applies, ticks, crashes) and
    settles. A revert of an edit made after the request was sent must be withheld and
    repaired, a same-second tie counted ambiguous (``World.check_end``). The search from an
    empty world above seldom stamps while an edit is in flight, this one does in most
    schedules (about 150 reverts in 100 schedules)."""
    world = World()
    try:
        run(choices, world, prefix=WINDOW[:-5])
    except Violation:
        note(f"SAFETY_SEED={SEED}; the schedule played:\n" + "\n".join(world.log))
        raise


def _checks_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """D3 as it was before issue 11 path 1: the watches always look caught up and the
    branch's published state never counts unacknowledged events."""
    monkeypatch.setattr(mirrored_module, "unmirrored", lambda listed, known: [])
    view = BranchState.view
    monkeypatch.setattr(
        BranchState, "view", lambda self: dataclasses.replace(view(self), unacked=0)
    )


#: What Flux does once a source stamp is out: fetch the tip and, two seconds later (the
#: sandbox's pacing), apply its first object.
FLUX_APPLIES = ["flux source fetches", "tick 1s", "tick 1s", "flux applies an object"]

#: The owner's steps until it has taken the branch: the lease, the fetch, what the applier last
#: applied (the very first start, issue 23, finding 12) and the takeover published. Schedules that
#: race the first pass start with them.
STARTS = ["step w0"] * 19

#: Issue 11 path 1 as a schedule: an API edit the watcher has not published when the
#: dispatcher checks the branch (D3) for an outside push's ForeignCommit.
WATCHER_LAG = [
    *STARTS,
    "outside push b",
    "webhook delivered",
    "edit a",
    *["step w0"] * 40,
    "run d0",
]


def test_an_edit_still_in_the_watcher_is_not_reverted() -> None:
    """D3 (issue 11 path 1): the dispatcher lists the watch's namespace, finds the edit the
    watcher has not published and answers Stale; after settling, no apply reverted anything
    and the edit is in Git. With the check off (``_checks_off``) the same schedule stamps and
    Flux reverts the edit: ``test_the_kept_schedules_still_reach_their_race``."""
    world = World()
    run_named(WATCHER_LAG, world)
    assert world.counts["outcome Stale"] >= 1
    assert not [k for k in world.counts if k.startswith("collision")]


#: The same race one step later: the edit reaches the stream while the pass that decides the
#: ForeignCommit is running, after it read the stream. (14 steps since the desk reads the
#: applier's attempt before each decision, to keep a handed-back one in the GitTargets' recent
#: requests: two more steps of the pass come before the edit; 12 before that.)
STREAM_LAG = [
    *STARTS,
    "outside push b",
    "webhook delivered",
    *["step w0"] * 14,
    "edit a",
    "watcher publishes",
    *["step w0"] * 12,
    "run d0",
]


def test_an_edit_unread_in_the_stream_is_not_reverted() -> None:
    """Q3, Q4, D3: the branch's published state counts the event no owner has read, so the
    pass deciding the ForeignCommit finds the branch busy and sends nothing (had it sent, D3
    reads the same count); after settling no apply reverted anything and the edit is in Git.
    With the check off the same schedule stamps and Flux reverts the edit
    (``test_the_kept_schedules_still_reach_their_race``)."""
    world = World()
    run_named(STREAM_LAG, world)
    assert world.counts["outcome Delivered"] >= 1
    assert not [k for k in world.counts if k.startswith("collision")]


@pytest.mark.parametrize(("schedule", "kind"), [(WATCHER_LAG, "watcher"), (STREAM_LAG, "stream")])
def test_the_kept_schedules_still_reach_their_race(
    monkeypatch: pytest.MonkeyPatch, schedule: list[str], kind: str
) -> None:
    """The regressions above are meaningful: with D3's catch-up checks off, each schedule
    stamps Flux while the edit is where it names, and Flux reverts it (observed: this is the
    race the suite found before issue 11 path 1 was fixed)."""
    _checks_off(monkeypatch)
    world = World()
    with pytest.raises(Violation, match=f"core promise broke \\({kind}\\)"):
        run_named([*schedule, *FLUX_APPLIES], world, end=False)
    assert world.counts[f"collision {kind}"] == 1


#: The apply window: the edit comes after the dispatcher checked the branch (D3) and before
#: Flux applies; nothing the product reads before stamping can see it, so the apply reverts it.
WINDOW = [
    *STARTS,
    "outside push b",
    "webhook delivered",
    *["step w0"] * 40,
    "run d0",
    "edit a",
    *FLUX_APPLIES,
]


#: Found by the window search (``SAFETY_SEED=31``, 2,000 schedules; issue 23, finding 11, a fault of
#: the suite): Flux's source fetches the ForeignCommit's commit, then a second outside push
#: lands and its webhook is lost, and Flux applies the older artifact. Nothing in the product
#: can know Git moved on until the owner reads the tip (no webhook, and the attempt was
#: Delivered for the commit it asked); Q7 makes that the steady tick, and P14 the first steady
#: tick once the receiver has been silent for the trust age (it delivered the first push's
#: webhook). The world called itself settled before that tick, with the cluster at the older
#: value; it now waits for it.
LOST_AFTER_FETCH = [*WINDOW[:-5], "step w1", "flux source fetches", "outside push b"]
LOST_AFTER_FETCH += ["step w0", "webhook lost", "step w1"]


def test_a_push_whose_webhook_was_lost_after_the_fetch_is_applied_after_the_steady_tick() -> None:
    """Q5, Q7, P14: the owner's steady tick reads the tip, owes a ForeignCommit for the second
    push, and Flux applies it: the cluster ends at Git's tip, once the receiver has been
    silent for the trust age (a missing webhook costs latency, never an apply)."""
    world = World()
    run_named(LOST_AFTER_FETCH, world)
    assert world.live["b"].value == value_in(world.remote.tree(world.remote.tip), "b")
    foreign = [at for q, at, _ in world.requests if "ForeignCommit" in q.reasons]
    assert len(foreign) == 2
    trust = SETTINGS.remote_trust_max_age.total_seconds()
    assert foreign[1] - foreign[0] >= trust  # the first tick past the trust age, no webhook


def test_an_edit_inside_the_apply_window_is_withheld_and_repaired() -> None:
    """W1: Flux reverts an edit made after the request was sent (no product can prevent
    that); the owner withholds the revert (the guard's decision, from the managedFields the
    simulated API server keeps), Git gets the edit once, the CatchUp its push owes applies it
    back, and after quiet the cluster equals the Git tip with no commit of Flux's value."""
    world = World()
    run_named(WINDOW, world)
    assert world.counts["collision withheld"] == 1
    (revert,) = world.reverts
    assert world.decisions[revert.rv].verdict is Verdict.WITHHELD
    assert world.live["a"].value == revert.edit
    assert world.counts["outcome Delivered"] >= 2  # the ForeignCommit, then the CatchUp


def test_with_the_window_off_the_revert_is_mirrored() -> None:
    """The test above can catch the race (observed): with the guard off (the owners' jobs
    built with ``apply_window=False``) the revert is mirrored and the edit survives only in
    history, or not at all."""
    with pytest.raises(Violation, match=r"never reached Git|written twice|no convergence"):
        run_named(WINDOW, World(apply_window=False))


#: A same-second tie (W2): a console edit (a manager Flux's cleanup leaves, which keeps an
#: annotation of its own) lands in the second Flux applies in, after the request was sent.
TIE = [*WINDOW[:-5], *FLUX_APPLIES[:-1], "console edit a", "flux applies an object"]


def test_a_same_second_tie_is_mirrored_and_counted_ambiguous() -> None:
    """W2: the revert's newest managedFields entries are Flux's and the console's, in one
    second: the owner cannot prove the write was Flux's alone, so it mirrors it (Git gets
    Flux's value back, the edit is lost) and counts it ``ambiguous``."""
    world = World()
    run_named(TIE, world)
    assert world.counts["collision tie"] == 1
    (revert,) = world.reverts
    assert revert.tie
    assert world.decisions[revert.rv].verdict is Verdict.AMBIGUOUS
    assert world.live["a"].value == revert.value


def test_the_core_promise_holds_outside_the_apply_window() -> None:
    """The core promise with its one exception: no apply reverts an API edit made before its
    request was sent (the watcher and stream schedules), and the one edit inside the window
    is withheld and repaired (checked at the end of the schedule)."""
    for schedule in (WATCHER_LAG, STREAM_LAG, WINDOW):
        world = World()
        run_named(schedule, world)
        kinds = {k for k in world.counts if k.startswith("collision")}
        assert kinds <= {"collision withheld"}


#: Found by the window search (``test_schedules_around_a_stamp``), shrunk by hand-run
#: deletion: d0 reports the request's outcome and is killed before it writes the ledger; the
#: owner consumes the outcome (the attempt is no longer out) and finds no ledger entry, so the
#: window is closed while Flux still applies, and Flux's revert of the edit of b is mirrored.
LEDGER_GAP = [*WINDOW[:-5], "step d0", "flux source fetches", "step d0", "step d0"]
LEDGER_GAP += ["console edit a", "step d0", "step w1", "edit a", "tick 1s", "crash w1"]
LEDGER_GAP += ["step d0", "crash w0", "step d0", "tick 1s", "edit b", "step w1-1"]
LEDGER_GAP += ["step w0-1", "crash w0-1", "crash d0"]


def test_a_dispatcher_killed_before_its_ledger_write_keeps_the_window_open() -> None:
    """W1, S3: the dispatcher writes the ledger before it reports the outcome, so the owner
    sees the request (out, or in the ledger) and withholds the revert."""
    world = World()
    run_named(LEDGER_GAP, world)
    assert world.counts["collision withheld"] >= 1


def test_reporting_before_the_ledger_write_closes_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the bug it guards (observed): with the old order (report,
    then ledger) the revert is mirrored. It was found under the old D6 (a source stamp
    finished once attempted), which makes d0 report while Flux still applies; since D6 waits
    for the reconcile to end the schedule no longer reaches the gap, so the old D6 is played
    too (``tests/unit/dispatcher/test_finish.py`` pins the order on its own)."""
    monkeypatch.setattr(world_module, "flux_handled", _old_handled)

    def old_finish(ctx: Any, request: Any, outcome: Any) -> None:
        if not ctx.attempts.report_once(request.branch_key, outcome):
            return
        uids = {uid for held in request.reasons.values() for uid in held}
        ctx.ledger.record(uids, LastRequest.of(request, outcome))

    monkeypatch.setattr(dispatcher_jobs, "finish", old_finish)
    with pytest.raises(Violation, match="inside the apply window was mirrored"):
        run_named(LEDGER_GAP, World())


#: Found by the window search (default seed), shrunk by hand-run deletion: Flux fetches the
#: source and starts the reconcile (``lastAttemptedRevision`` is written before the apply,
#: facts F3), API edits land, and the apply's objects come a minute later. D6 took the
#: attempted revision as the finish, so the window closed 10 s after the apply *started* and
#: the revert of the edit of a was mirrored ("no apply window open").
SLOW_APPLY = [*WINDOW[:-5], "step w1", "edit b", "step w1", "flux source fetches", "step w1"]
SLOW_APPLY += ["step w1", "step w1", "console edit a", "edit a", "step d0", "step d0", "tick 60s"]


def _old_handled(
    plan: Plan,
    stamp: str,
    commit: str,
    handled_at: str,
    attempted: str,
    *,
    ready: str,
    holding: str = "",
) -> bool:
    """D6 before the fix: a source stamp finished once the revision was attempted."""
    if plan == "stamp-source":
        return revision_commit(attempted) == commit
    return plan != "stamp-kustomization" or handled_at == stamp


def test_a_source_stamp_is_finished_when_the_apply_ended_not_when_it_started() -> None:
    """D6, W1: the attempt is Delivered only once the reconcile that attempted the commit
    ended (Ready no longer Unknown), so the window is open for the whole apply and the reverts
    of both edits are withheld and repaired."""
    world = World()
    run_named(SLOW_APPLY, world)
    assert world.counts["collision withheld"] >= 1
    assert all(world.decisions[r.rv].verdict is Verdict.WITHHELD for r in world.reverts)


def test_finishing_a_source_stamp_at_the_attempted_revision_closes_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the bug it guards (observed): with the old D6 (the attempted
    revision alone) the revert is mirrored."""

    monkeypatch.setattr(world_module, "flux_handled", _old_handled)
    with pytest.raises(Violation, match="inside the apply window was mirrored"):
        run_named(SLOW_APPLY, World())


#: Issue 12: an outside push lands after the dispatcher stamped the source for the previous
#: one, before Flux fetches; Flux fetches and applies the newer tip, never the commit asked for.
NEWER_ARTIFACT = [*WINDOW[:-5], "outside push a", "flux source fetches", "tick 1s", "tick 1s"]
NEWER_ARTIFACT += ["flux applies an object", "flux applies an object", "run d0"]


def test_an_apply_of_a_newer_artifact_than_the_commit_finishes_the_stamp() -> None:
    """D6: the source handled the stamp, so its artifact holds the commit; once that apply
    ended the attempt is Delivered (on the exact-commit rule it waited out its deadline, the
    worker's 330 s, with no outcome), and the world still settles with every invariant."""
    world = World()
    start = world.now
    run_named(NEWER_ARTIFACT, world, end=False)
    assert world.counts["outcome Delivered"] == 1
    assert world.now - start < 10  # the apply's few seconds, not the 300 s deadline
    run_named([], world)


#: The first owner takes the branch and dies before it publishes a tip; an outside push lands
#: and its webhook is stored before the next owner starts (which skips stored notices).
FIRST_START = [
    *["step w0"] * 9,
    "crash w0",
    "outside push b",
    "webhook delivered",
    "lease expires",
]


def test_a_start_after_an_owner_that_published_nothing_applies_the_tip() -> None:
    """Q5: the next owner finds no tip published after an earlier owner took the branch, so
    the tip it finds (not ours) is owed a ForeignCommit; Flux applies the outside push and the
    cluster converges."""
    world = World()
    run_named(FIRST_START, world)
    assert world.counts["outcome Delivered"] >= 1


def test_without_the_fix_the_first_start_schedule_does_not_converge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the bug it guards (observed): an owner that adopts the tip
    as its baseline leaves the outside push unapplied, and the cluster never converges."""
    monkeypatch.setattr(branch_module, "_owned_before", lambda lease: False)
    _adopting(monkeypatch)
    with pytest.raises(Violation, match="no convergence"):
        run_named(FIRST_START, World())


def _adopting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The very first start as it was before issue 23: it adopted the tip it fetched,
    as if the applier held it."""
    monkeypatch.setattr(World, "applied_commit", lambda self, ref, namespaces: self.remote.tip)


#: Issue 23 (finding 12): an outside push lands right after the GitTarget is created, its webhook is
#: stored, and only then does the branch's very first owner start (the notices stored before
#: a start are skipped, ``NoticeReader.start``).
VERY_FIRST_START = ["outside push b", "webhook delivered", *STARTS]


def test_an_outside_push_before_the_very_first_start_is_applied() -> None:
    """Q5, A1: the first owner reads what the Kustomization last applied (the commit it was
    installed at), finds it is not the tip, and owes a ForeignCommit; Flux applies the push
    and the cluster converges (checked at the end)."""
    world = World()
    run_named(VERY_FIRST_START, world)
    assert world.live["b"].value == "b-git1"
    assert world.counts["outcome Delivered"] >= 1


def test_a_first_start_that_adopts_the_tip_never_applies_the_push(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the bug it guards (observed): a first owner that adopts the
    tip leaves the outside push unapplied, and the cluster never converges."""
    _adopting(monkeypatch)
    with pytest.raises(Violation, match="no convergence"):
        run_named(VERY_FIRST_START, World())


#: A watcher that is down with an API edit unseen while a ForeignCommit is owed (D3 is Stale
#: as long as the watch is behind): the request storm consent's branch suspected.
WATCHER_DOWN = [
    *STARTS,
    "edit a",
    "outside push b",
    "webhook delivered",
]
#: Clock run at the owner's cadence in ``test_a_watcher_that_is_down_costs_no_request_storm``.
STORM_S = 30.0


def _attempts_while_behind(world: World) -> int:
    """Requests enqueued while the watch stays behind for ``STORM_S`` of the clock, with the
    owner passing every ``RETRY_S`` (0.2 s; in production an outcome rings the owner's doorbell
    and gets its pass at once, so a Stale answered at once would be re-sent at least as fast)."""
    before = len(world.sent_at)
    run_named(
        WATCHER_DOWN,
        world,
        end=False,
        then=lambda: cadence(world, STORM_S, RETRY_S),
    )
    return len(world.sent_at) - before


def test_a_watcher_that_is_down_costs_no_request_storm() -> None:
    """D3, A4 (issue 11): while the watch is behind, the attempt waits for it
    (``after_behind``, 60 s) instead of answering Stale at once, which the owner would re-send
    at its next pass (Stale has no backoff): one request in 30 s of the clock, not one per
    pass. No backoff was added (the suite's Stale check runs on every step)."""
    world = World()
    attempts = _attempts_while_behind(world)
    assert attempts == 1
    assert not world.appliers_record().failures


def test_answering_stale_at_once_while_behind_is_a_storm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The measurement above is meaningful (observed): an attempt that is Stale as soon as
    it finds the watch behind is re-sent on every pass of the owner, 5 a second here (a pass
    every 0.2 s), each with an ``ls-remote`` and a list per watch."""
    monkeypatch.setattr(attempt_module, "after_behind", lambda *args: "stale")
    world = World()
    attempts = _attempts_while_behind(world)
    assert attempts >= STORM_S / RETRY_S * 0.9


#: Found by ``make safety`` (2,000 schedules, the default seed), shrunk by hypothesis (kept as
#: the action names its choices played, since the actions enabled changed since): the
#: owner w1's lease runs out while it is paused, w0-1 takes the branch and claims what was
#: pending, then w1 reads the two new events and finds its lease lost. Nobody read them again:
#: the edit never reached Git and, the stream never empty, the branch was never quiet.
#: (Three more steps of w1 at its start since the first start reads the applier, issue 23.)
STRANDED = ["edit a", "edit a", *["step w1"] * 5, "step w0", "step w1", "watcher publishes"]
STRANDED += [*["step w1"] * 3, "crash w0", *["step w1"] * 3, "outside push a", "step w0-1"]
STRANDED += ["step w1", "webhook lost", "step w1", "lease expires", *["step w1"] * 5]
STRANDED += ["watcher publishes", "step w1", "step w0-1"]


def test_events_a_stale_owner_read_after_the_takeover_are_taken_over() -> None:
    """M8, Q3: the owner takes over entries a stale owner read after its start
    (``EventStream.claim_stranded``), so the schedule settles and converges."""
    world = World()
    run_named(STRANDED, world)
    assert world.counts["outcome Delivered"] >= 1


def test_without_the_take_over_the_stranded_schedule_never_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the race it guards (observed)."""
    monkeypatch.setattr(EventStream, "claim_stranded", lambda self, bk, consumer: [])
    with pytest.raises(Violation, match="did not settle"):
        run_named(STRANDED, World())


#: Found by the window search (``SAFETY_EXAMPLES=1000``, the default seed; and seed 1), shrunk
#: by hand-run deletion: the ForeignCommit for the outside push b-git1 is out, Flux fetches
#: its source (b-git1), then another outside push (b-git2) lands and the owner follows the
#: tip. Flux's apply of the older artifact writes b-git1 (its manager alone, no API edit);
#: mirrored, the owner's commit wrote b-git1 again over b-git2 ("written twice", an outside
#: push's value lost).
OLDER_ARTIFACT = [*WINDOW[:-5], "flux source fetches", "outside push b"]


def test_an_apply_of_an_artifact_older_than_the_tip_is_withheld() -> None:
    """W1 (historical): the applier-only write of what Git held only before the tip is
    withheld; the ForeignCommit owed for b-git2 applies it, and the schedule converges with
    no value written twice."""
    world = World()
    run_named(OLDER_ARTIFACT, world)
    assert any(d.verdict is Verdict.HISTORICAL for d in world.decisions.values())
    assert world.live["b"].value == "b-git2"


def test_without_the_history_check_the_older_artifact_is_written_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept schedule reaches the bug it guards (observed): with no history read (W1 as it
    was), the older value is mirrored over the newer outside push."""
    monkeypatch.setattr(worktree_module, "only_in_history", lambda *args: False)
    with pytest.raises(Violation, match="b=b-git1 written twice"):
        run_named(OLDER_ARTIFACT, World())
