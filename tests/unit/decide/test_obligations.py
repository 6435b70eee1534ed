"""A1-A5 and Q2-Q4 as pure rules, with properties over random sequences."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shared.decide.apply_window import AFTER_FINISH_S
from shared.decide.obligations import (
    Ask,
    Wait,
    cancel_refusal,
    decide,
    hand_back_if_overdue,
    keep_live,
    on_outcome,
    owe_catch_up,
    owe_foreign_commit,
    owe_refusal,
    owe_repair,
    sent,
)
from shared.decide.quiet import BranchView, is_quiet
from shared.model.appliers import Applier
from shared.settings import Settings

#: The process's attempt deadline (A4), as a worker started with no settings would use it.
DEADLINE_S = Settings().attempt_deadline.total_seconds()

QUIET = BranchView(
    tip="c1", windows_open=0, pending_total=0, push_in_flight=False, last_write_at=0.0
)
KS = Applier("Kustomization", quiet_periods={"u1": 30.0})
APP = Applier("Application")


def test_quiet_means_nothing_open_pending_or_in_flight() -> None:
    assert is_quiet(QUIET)
    assert not is_quiet(replace(QUIET, windows_open=1))
    assert not is_quiet(replace(QUIET, pending_total=1))
    assert not is_quiet(replace(QUIET, push_in_flight=True))


def test_a_foreign_commit_is_asked_at_once_on_a_quiet_branch() -> None:
    applier = owe_foreign_commit(KS, "c1", ["u1"])
    decision = decide(applier, QUIET, now=1.0)
    assert decision == Ask("c1", {"ForeignCommit": frozenset({"u1"})})


def test_nothing_goes_out_on_a_busy_branch() -> None:
    applier = owe_foreign_commit(KS, "c1", ["u1"])
    for busy in (
        replace(QUIET, windows_open=1),
        replace(QUIET, pending_total=2),
        replace(QUIET, push_in_flight=True),
    ):
        assert isinstance(decide(applier, busy, now=100.0), Wait)


def test_catch_up_waits_the_quiet_period_from_the_last_write() -> None:
    applier = owe_catch_up(KS, "c1", ["u1"])
    branch = replace(QUIET, last_write_at=100.0)
    assert decide(applier, branch, now=129.0) == Wait("quiet period", 130.0)
    assert isinstance(decide(applier, branch, now=130.0), Ask)
    rewritten = replace(branch, last_write_at=125.0)  # a second write restarts it (Q2)
    assert decide(applier, rewritten, now=130.0) == Wait("quiet period", 155.0)


def test_an_application_is_never_owed_a_catch_up() -> None:
    app = owe_catch_up(Applier("Application"), "c1", ["u1"])
    assert app.owes() == {}
    assert decide(app, QUIET, now=1000.0) == Wait("nothing owed")


def test_a_shared_kustomization_waits_the_longest_quiet_period() -> None:
    shared = replace(KS, quiet_periods={"u1": 10.0, "u2": 45.0})
    applier = owe_catch_up(shared, "c1", ["u1", "u2"])
    assert decide(applier, QUIET, now=44.0) == Wait("quiet period", 45.0)
    ask = decide(applier, QUIET, now=45.0)
    assert isinstance(ask, Ask) and ask.reasons["CatchUp"] == {"u1", "u2"}


def test_one_attempt_at_a_time() -> None:
    applier = owe_foreign_commit(KS, "c1", ["u1"])
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = sent(applier, ask, "t1", 1.0, DEADLINE_S)
    assert isinstance(decide(out, QUIET, 2.0), Wait)


def test_delivered_clears_what_it_covered_only() -> None:
    applier = owe_refusal(owe_foreign_commit(KS, "c1", ["u1"]), "u1", consents=True)
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = sent(applier, ask, "t1", 1.0, DEADLINE_S)
    newer = owe_foreign_commit(out, "c2", ["u1"])  # another foreign push meanwhile
    done = on_outcome(newer, "t1", "Delivered", 2.0)
    assert done.attempt is None and done.refusals == frozenset()
    assert done.foreign_commit == "c2", "a newer commit stays owed"


def test_stale_sends_nothing_and_does_not_back_off() -> None:
    applier = sent(
        owe_foreign_commit(KS, "c1", ["u1"]),
        Ask("c1", {"ForeignCommit": frozenset({"u1"})}),
        "t1",
        1.0,
        DEADLINE_S,
    )
    stale = on_outcome(applier, "t1", "Stale", 2.0)
    assert stale.failures == 0 and stale.next_try_at == 0.0
    assert stale.foreign_commit == "c1"
    assert isinstance(decide(stale, replace(QUIET, tip="c1"), 2.0), Ask)


def test_failed_backs_off_exponentially_and_stays_owed() -> None:
    applier = owe_foreign_commit(KS, "c1", ["u1"])
    for failures, delay in ((1, 5.0), (2, 10.0), (3, 20.0)):
        ask = decide(applier, QUIET, 100.0 + 1000 * failures)
        assert isinstance(ask, Ask)
        now = 100.0 + 1000 * failures
        applier = on_outcome(
            sent(applier, ask, f"t{failures}", now, DEADLINE_S), f"t{failures}", "Failed", now
        )
        assert applier.failures == failures and applier.next_try_at == now + delay
        assert decide(applier, QUIET, now + delay - 0.1) == Wait("backing off", now + delay)


def test_an_overdue_attempt_is_handed_back_as_failed() -> None:
    applier = owe_foreign_commit(KS, "c1", ["u1"])
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = sent(applier, ask, "t1", 1.0, DEADLINE_S)
    assert hand_back_if_overdue(out, 2.0) == out
    back = hand_back_if_overdue(out, out.attempt.deadline if out.attempt else 0.0)
    assert back.attempt is None and back.failures == 1 and back.foreign_commit == "c1"


def test_an_outcome_for_another_token_changes_nothing() -> None:
    out = sent(owe_foreign_commit(KS, "c1", ["u1"]), Ask("c1", {}), "t1", 1.0, DEADLINE_S)
    assert on_outcome(out, "t-old", "Delivered", 2.0) == out


def test_a_refusal_made_while_its_refusal_is_out_survives_that_delivery() -> None:
    """A4, A5: an edit refused while a Refusal for the same GitTarget is out may come after the
    applier applied (the apply cannot have reverted it), so that Delivered leaves it owed and
    the next quiet moment asks again; a refusal made before the request is cleared."""
    applier = owe_refusal(KS, "u1", consents=True)
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = owe_refusal(sent(applier, ask, "t1", 1.0, DEADLINE_S), "u1", consents=True)
    assert out.refused_again == {"u1"}
    done = on_outcome(out, "t1", "Delivered", 2.0)
    assert done.refusals == {"u1"} and done.refused_again == frozenset()
    again = decide(done, QUIET, 3.0)
    assert isinstance(again, Ask) and again.reasons == {"Refusal": frozenset({"u1"})}
    second = on_outcome(sent(done, again, "t2", 3.0, DEADLINE_S), "t2", "Delivered", 4.0)
    assert second.owes() == {}


def test_a_refusal_again_is_kept_through_json_and_dropped_by_recovery() -> None:
    """A5: the record survives a restart of its owner; a recovery cancels it with the rest."""
    applier = owe_refusal(KS, "u1", consents=True)
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = owe_refusal(sent(applier, ask, "t1", 1.0, DEADLINE_S), "u1", consents=True)
    assert Applier.from_json(out.to_json()) == out
    assert cancel_refusal(out, "u1").refused_again == frozenset()
    assert keep_live(out, []).refused_again == frozenset()


def test_refusal_needs_consent_and_is_cancelled_by_recovery() -> None:
    assert owe_refusal(KS, "u1", consents=False).refusals == frozenset()
    owed = owe_refusal(KS, "u1", consents=True)
    assert cancel_refusal(owed, "u1").owes() == {}


def test_obligations_of_gone_incarnations_are_dropped() -> None:
    applier = owe_refusal(owe_foreign_commit(KS, "c1", ["u1", "u2"]), "u2", consents=True)
    alive = keep_live(applier, ["u1"])
    assert alive.foreign_uids == {"u1"} and alive.refusals == frozenset()


def test_nothing_to_ask_drops_only_the_reasons_no_one_holds() -> None:
    applier = owe_refusal(owe_foreign_commit(KS, "c1", ["u1"]), "u1", consents=True)
    ask = decide(applier, QUIET, 1.0)
    assert isinstance(ask, Ask)
    out = on_outcome(
        sent(applier, ask, "t1", 1.0, DEADLINE_S), "t1", "NothingToAsk", 2.0, dropped=["Refusal"]
    )
    assert out.refusals == frozenset() and out.foreign_commit == "c1"


# --- W1 for an Application: a withheld collision owes a Repair --------------------------------


def test_a_withheld_collision_owes_an_application_one_sync_once_its_window_closed() -> None:
    """W1, A1: the revert was withheld at 100 after the attempt had finished; the Repair asks
    the tip once the window of that apply (at most 10 s after now) has closed."""
    app = owe_repair(APP, "u1", now=100.0)
    assert app.owes() == {"Repair": frozenset({"u1"})}
    assert decide(app, QUIET, 100.0 + AFTER_FINISH_S - 1) == Wait("apply window", 110.0)
    assert decide(app, replace(QUIET, windows_open=1), 200.0) == Wait("the branch is busy")
    assert decide(app, QUIET, 110.0) == Ask("c1", {"Repair": frozenset({"u1"})})


def test_a_kustomization_is_owed_no_repair_its_catch_up_applies_the_edit_back() -> None:
    assert owe_repair(KS, "u1", now=1.0) == KS
    assert owe_repair(Applier("Webhook"), "u1", now=1.0).owes() == {}


def test_a_collision_during_the_attempt_out_waits_for_its_end_and_survives_it() -> None:
    """The revert belongs to the attempt out (a ForeignCommit): its Delivered does not clear
    the Repair, which then waits out that apply's 10 s after the outcome."""
    app = owe_foreign_commit(APP, "c1", ["u1"])
    ask = decide(app, QUIET, 100.0)
    assert isinstance(ask, Ask) and set(ask.reasons) == {"ForeignCommit"}
    out = owe_repair(sent(app, ask, "t1", 100.0, DEADLINE_S), "u1", now=103.0)
    assert decide(out, replace(QUIET, tip="c2"), 115.0) == Wait(
        "an attempt is out", out.attempt.deadline
    )  # type: ignore[union-attr]
    done = on_outcome(out, "t1", "Delivered", 120.0)
    assert done.owes() == {"Repair": frozenset({"u1"})} and done.repair_at == 130.0
    assert decide(done, replace(QUIET, tip="c2"), 129.0) == Wait("apply window", 130.0)
    repair = decide(done, replace(QUIET, tip="c2"), 130.0)
    assert repair == Ask("c2", {"Repair": frozenset({"u1"})})
    finished = on_outcome(sent(done, repair, "t2", 130.0, DEADLINE_S), "t2", "Delivered", 140.0)
    assert finished.owes() == {} and not finished.worth_keeping()


def test_a_collision_during_a_repair_survives_that_repairs_delivery() -> None:
    """The Repair's own sync reverted a newer edit: its Delivered leaves the GitTarget owed."""
    app = owe_repair(APP, "u1", now=0.0)
    ask = decide(app, QUIET, 50.0)
    assert isinstance(ask, Ask)
    out = owe_repair(sent(app, ask, "t1", 50.0, DEADLINE_S), "u1", now=52.0)
    assert out.repaired_again == {"u1"}
    again = on_outcome(out, "t1", "Delivered", 60.0)
    assert again.owes() == {"Repair": frozenset({"u1"})} and again.repaired_again == frozenset()
    # without the second collision, the same Delivered clears it
    assert on_outcome(sent(app, ask, "t1", 50.0, DEADLINE_S), "t1", "Delivered", 60.0).owes() == {}


def test_a_repair_rides_along_with_another_reason_at_once() -> None:
    app = owe_foreign_commit(owe_repair(APP, "u1", now=100.0), "c1", ["u2"])
    assert decide(app, QUIET, 101.0) == Ask(
        "c1", {"ForeignCommit": frozenset({"u2"}), "Repair": frozenset({"u1"})}
    )


def test_a_failed_repair_stays_owed_and_backs_off_and_a_gone_target_drops_it() -> None:
    app = owe_repair(APP, "u1", now=0.0)
    ask = decide(app, QUIET, 20.0)
    assert isinstance(ask, Ask)
    failed = on_outcome(sent(app, ask, "t1", 20.0, DEADLINE_S), "t1", "Failed", 30.0)
    assert failed.owes() == {"Repair": frozenset({"u1"})}
    assert decide(failed, QUIET, 31.0) == Wait("backing off", failed.next_try_at)
    assert Applier.from_json(failed.to_json()) == failed
    assert keep_live(failed, ["u2"]).owes() == {}


# --- properties over random sequences -------------------------------------------------------

_steps = st.lists(
    st.one_of(
        st.tuples(st.just("foreign"), st.sampled_from(["c1", "c2", "c3"])),
        st.tuples(st.just("push"), st.sampled_from(["c4", "c5"])),
        st.tuples(st.just("refuse"), st.booleans()),
        st.tuples(st.just("write"), st.booleans()),
        st.tuples(
            st.just("outcome"), st.sampled_from(["Delivered", "Stale", "NothingToAsk", "Failed"])
        ),
        st.tuples(st.just("tick"), st.floats(0, 400)),
        st.tuples(st.just("collide"), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_steps, st.sampled_from(["Kustomization", "Application"]))
# W1: a collision during a Repair's own sync survives its Delivered; a collision during another
# attempt waits 10 s past that attempt's outcome (random search finds these only now and then)
@example(
    [("collide", None), ("tick", 20.0), ("collide", None), ("outcome", "Delivered")], "Application"
)
@example(
    [("foreign", "c1"), ("collide", None), ("tick", 15.0), ("outcome", "Delivered")], "Application"
)
def test_random_sequences_keep_the_invariants(steps: list[tuple[str, object]], kind: str) -> None:
    """A1-A5, Q4 and W1's Repair: never a request on a busy branch or two out at once; only a
    Kustomization is asked a CatchUp, only an Application a Repair; an outcome never clears a
    Refusal or a Repair that arose while its attempt was out; a Repair alone never goes out
    before the colliding apply's window has closed."""
    run = _Run(Applier(kind, quiet_periods={"u1": 30.0}))  # type: ignore[arg-type]
    for step, arg in steps:
        before_attempt = run.applier.attempt
        getattr(run, step)(arg)
        run.decide()
        attempt = run.applier.attempt
        if before_attempt is not None and attempt is not None:
            assert attempt == before_attempt or attempt.token != before_attempt.token


@dataclass
class _Run:
    """One random sequence: the applier, its branch and what the invariants remember."""

    applier: Applier
    branch: BranchView = QUIET
    now: float = 0.0
    tokens: int = 0
    refused_since_sent: bool = False  # a consented refusal made while an attempt was out
    collided_since_sent: bool = False  # a withheld collision while an attempt was out (W1)
    window_ends: float = 0.0  # when the latest colliding apply's window has surely closed

    def foreign(self, commit: object) -> None:
        self.applier = owe_foreign_commit(self.applier, str(commit), ["u1"])
        self.branch = replace(self.branch, tip=str(commit))

    def push(self, commit: object) -> None:
        self.applier = owe_catch_up(self.applier, str(commit), ["u1"])
        self.branch = replace(self.branch, tip=str(commit), last_write_at=self.now)

    def refuse(self, consents: object) -> None:
        self.applier = owe_refusal(self.applier, "u1", consents=bool(consents))
        self.refused_since_sent |= bool(consents and self.applier.attempt)

    def collide(self, _: object) -> None:
        self.applier = owe_repair(self.applier, "u1", self.now)
        self.collided_since_sent |= self.applier.attempt is not None
        self.window_ends = max(self.window_ends, self.now + AFTER_FINISH_S)

    def write(self, pending: object) -> None:
        self.branch = replace(
            self.branch, pending_total=1 if pending else 0, last_write_at=self.now
        )

    def outcome(self, outcome: object) -> None:
        if self.applier.attempt is None:
            return
        failures = self.applier.failures
        token = self.applier.attempt.token
        self.applier = on_outcome(self.applier, token, outcome, self.now)  # type: ignore[arg-type]
        if outcome == "Stale":
            assert self.applier.failures == failures, "a Stale outcome never backs off"
        self._ended()

    def tick(self, seconds: object) -> None:
        self.now += float(seconds)  # type: ignore[arg-type]
        out = self.applier.attempt is not None
        self.applier = hand_back_if_overdue(self.applier, self.now)
        if out and self.applier.attempt is None:
            self._ended()

    def _ended(self) -> None:
        """An attempt ended (an outcome, or handed back): what arose while it was out stays."""
        if self.refused_since_sent:
            assert "u1" in self.applier.refusals, "an outcome never clears a later refusal"
        if self.collided_since_sent and self.applier.kind == "Application":
            assert "u1" in self.applier.repairs, "an outcome never clears a later collision"
        if self.applier.repairs:
            self.window_ends = max(self.window_ends, self.now + AFTER_FINISH_S)
        self.refused_since_sent = self.collided_since_sent = False

    def decide(self) -> None:
        decision = decide(self.applier, self.branch, self.now)
        if not isinstance(decision, Ask):
            return
        kind = self.applier.kind
        assert is_quiet(self.branch), "never a request while something is pending"
        assert self.applier.attempt is None, "never two attempts out for one applier"
        assert set(decision.reasons) <= set(self.applier.owes())
        assert kind == "Kustomization" or "CatchUp" not in decision.reasons
        assert kind == "Application" or "Repair" not in decision.reasons
        if set(decision.reasons) == {"Repair"}:
            assert self.now >= self.window_ends, "a Repair alone waits out the colliding window"
        self.tokens += 1
        self.applier = sent(self.applier, decision, f"t{self.tokens}", self.now, DEADLINE_S)
        self.refused_since_sent = self.collided_since_sent = False


def test_a_request_decided_at_a_later_tip_clears_what_it_covered() -> None:
    """A foreign commit owed at c1 and asked at a later tip c2 (our push on top) is covered by
    the request: Delivered clears it, and a commit arriving while it is out stays owed."""
    applier = owe_catch_up(owe_foreign_commit(KS, "c1", ["u1"]), "c1", ["u1"])
    ask = decide(applier, replace(QUIET, tip="c2"), 100.0)
    assert isinstance(ask, Ask) and ask.commit == "c2"
    out = sent(applier, ask, "t1", 100.0, DEADLINE_S)
    assert on_outcome(out, "t1", "Delivered", 101.0).owes() == {}
    newer = owe_foreign_commit(out, "c3", ["u1"])
    assert on_outcome(newer, "t1", "Delivered", 101.0).foreign_commit == "c3"
