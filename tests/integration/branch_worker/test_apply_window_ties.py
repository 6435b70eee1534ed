"""W2 at the branch: a same-second tie decided by the watch's order, else counted ambiguous.

The schedule of tests/integration/branch_worker/test_apply_window.py (a real Redis, a real
bare repository, the hand-driven clock): an API edit lands while Flux's CatchUp is out, then a
write whose newest managedFields entries are Flux's and the editor's, in one second. The
watcher names the managers that made each write when the watch's order says
(``ObjectEvent.writers``); the branch withholds the applier's, mirrors the editor's, and
mirrors and counts only the tie no fact decides, saying which facts were missing.
"""

from __future__ import annotations

import pytest

from services.branch_worker.branch import BranchLoop
from shared.decide.apply_window import NO_ATTRIBUTION, NO_ORDER
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent
from shared.model.ids import ObjectId
from shared.store.collisions import Collisions
from tests.integration.branch_worker.conftest import Rig
from tests.integration.branch_worker.test_apply_window import (
    EDIT,
    FLUX,
    collisions,
    event,
    guarded,
    publish_and_push,
    send_catch_up,
    value_in_git,
)

pytestmark = pytest.mark.integration


def tie(rig: Rig, value: str, writers: tuple[str, ...] | None) -> None:
    """A write of ConfigMap ``app`` whose newest entries are Flux's and the editor's."""
    second = "2026-12-01T10:00:05Z"
    rig.events.publish(
        rig.bk,
        ObjectEvent(
            target=GitTargetRef(rig.target.uid, "team", "gt"),
            operation="UPDATE",
            object_id=ObjectId("", "v1", "configmaps", "ConfigMap", "team", "app"),
            uid="uid-app",
            resource_version=str(rig.clock.now),
            body={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "app", "namespace": "team"},
                "data": {"k": value},
            },
            managers=(ManagerEntry(FLUX, "Apply", second), ManagerEntry(EDIT, "Update", second)),
            observed_at=rig.clock.now,
            writers=writers,
        ),
    )


def _edit_inside_the_apply(rig: Rig) -> BranchLoop:
    loop = guarded(rig)
    publish_and_push(rig, loop, "first", EDIT)
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    event(rig, "api", EDIT)  # the API edit, inside the apply
    rig.clock.now += 0.5
    return loop


def _settle(rig: Rig, loop: BranchLoop) -> None:
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()


def test_a_tie_the_watch_order_gives_the_applier_is_withheld(rig: Rig) -> None:
    loop = _edit_inside_the_apply(rig)
    withheld, ambiguous = collisions("withheld"), collisions("ambiguous")
    tie(rig, "first", writers=(FLUX,))  # the apply's revert, after the edit in its second
    _settle(rig, loop)
    assert value_in_git(rig) == "api"
    assert (collisions("withheld"), collisions("ambiguous")) == (withheld + 1, ambiguous)
    kept = Collisions(rig.client, rig.keys).latest(rig.bk)[0]
    assert kept.outcome == "withheld"
    assert "the watch's order" in kept.why


def test_a_tie_the_watch_order_gives_the_editor_is_mirrored_uncounted(rig: Rig) -> None:
    loop = _edit_inside_the_apply(rig)
    withheld, ambiguous = collisions("withheld"), collisions("ambiguous")
    tie(rig, "second edit", writers=(EDIT,))  # the editor wrote again after the apply
    _settle(rig, loop)
    assert value_in_git(rig) == "second edit"
    assert (collisions("withheld"), collisions("ambiguous")) == (withheld, ambiguous)


def test_a_tie_no_fact_decides_is_mirrored_and_says_what_was_missing(rig: Rig) -> None:
    loop = _edit_inside_the_apply(rig)
    ambiguous = collisions("ambiguous")
    tie(rig, "first", writers=None)  # a watcher that had just started: no order known
    _settle(rig, loop)
    assert value_in_git(rig) == "first"  # W2: mirrored
    assert collisions("ambiguous") == ambiguous + 1
    kept = Collisions(rig.client, rig.keys).latest(rig.bk)[0]
    assert kept.outcome == "ambiguous"
    assert NO_ORDER in kept.why and NO_ATTRIBUTION in kept.why
