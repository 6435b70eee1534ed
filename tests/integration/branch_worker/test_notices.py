"""Q5-Q7 in the branch loop: notices are hints, the tip is read, foreign commits recorded."""

from __future__ import annotations

import pytest

from shared.decide.tips import TipKind
from shared.git.remote import ls_remote
from tests.integration.branch_worker.conftest import Rig, git

pytestmark = pytest.mark.integration


def test_late_webhook_of_our_push_leaves_the_open_window_alone(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    ours = git("rev-parse", "main", cwd=rig.bare)
    rig.publish("app", "UPDATE", {"a": "2"})
    rig.drain(loop)
    loop.on_notices([rig.notice(ours)])  # our own push's webhook arrives late
    assert loop.busy(), "the window stays open"
    rig.publish("app", "UPDATE", {"a": "3"})
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == [
        "GitOps Reverser on gt: 2 resource(s)",
        "[CREATE] v1/configmaps/app",
        "seed",
    ]


def test_a_foreign_notice_publishes_pending_writes_first(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    foreign = rig.foreign_push()
    loop.on_notices([rig.notice(foreign)])
    assert not loop.busy(), "the window was closed and pushed"
    assert rig.commits()[:2] == ["[CREATE] v1/configmaps/app", "foreign notes.md"]
    state = rig.states.read(rig.bk)
    assert state.foreign_tip == foreign
    assert state.foreign_at == rig.clock.now, "when it was found, by the injected clock"


def test_a_notice_whose_after_lies_is_corrected_by_ls_remote(rig: Rig) -> None:
    loop = rig.loop()
    foreign = rig.foreign_push()
    loop.on_notices([rig.notice("0" * 40)])
    state = rig.states.read(rig.bk)
    assert state.observed_tip == foreign
    assert state.foreign_tip == foreign


def test_steady_tick_finds_an_outside_push_without_any_webhook(rig: Rig) -> None:
    loop = rig.loop()
    foreign = rig.foreign_push()
    loop.tick()
    assert rig.states.read(rig.bk).observed_tip != foreign, "not before the tick is due"
    rig.clock.now += 60
    loop.tick()
    state = rig.states.read(rig.bk)
    assert state.observed_tip == foreign
    assert state.tip_read_at == rig.clock.now, "Q7: the read is published with its time"
    assert loop.tip == foreign, "an idle branch follows the new tip"


def test_our_own_tip_is_not_foreign(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert loop.check_tip() is TipKind.UNCHANGED
    assert rig.states.read(rig.bk).foreign_tip is None


def test_no_tip_read_while_the_receiver_delivers_within_the_trust_age(rig: Rig) -> None:
    """P14: an idle branch whose GitProvider's receiver delivered within the trust age reads
    no tip on its steady tick (no Git request); once the receiver has been silent for the age,
    the steady tick reads again and finds the outside push (Q7)."""
    delivered = [rig.clock.now]
    reads: list[float] = []

    def read() -> str | None:
        reads.append(rig.clock.now)
        return ls_remote(str(rig.bare), "main")

    loop = rig.loop(read_tip=read, delivered_at=lambda: delivered[0], trust_max_age=600.0)
    foreign = rig.foreign_push()
    for _ in range(9):  # nine steady ticks inside the trust age
        rig.clock.now += 60
        loop.tick()
    assert reads == [], "no Git request while the receiver delivers"
    assert loop.next_deadline() == rig.clock.now + 60, "the next tick, a tick later"
    rig.clock.now += 60  # ten minutes since the last delivery: the age is over
    loop.tick()
    assert reads == [rig.clock.now]
    state = rig.states.read(rig.bk)
    assert state.observed_tip == foreign and state.foreign_tip == foreign


@pytest.mark.parametrize(("delivered", "age"), [(False, 600.0), (True, 0.0)])
def test_the_steady_tick_reads_without_a_receiver_or_with_the_trust_age_zero(
    rig: Rig, delivered: bool, age: float
) -> None:
    """Q7 stays the fallback: no delivery on record, or ``remote_trust_max_age`` 0."""
    reads: list[float] = []

    def read() -> str | None:
        reads.append(rig.clock.now)
        return ls_remote(str(rig.bare), "main")

    def delivered_at() -> float | None:
        return rig.clock.now if delivered else None

    loop = rig.loop(read_tip=read, delivered_at=delivered_at, trust_max_age=age)
    rig.clock.now += 60
    loop.tick()
    assert reads == [rig.clock.now]
