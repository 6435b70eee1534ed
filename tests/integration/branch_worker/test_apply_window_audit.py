"""W2 at the branch with attribution on: a same-second tie the watch's order cannot decide (the
watcher had just started, so it did not deliver the write before) is decided by the audit fact
of this very write, read from the facts the receiver stores (P5), matched by uid and
resourceVersion.

The schedule of tests/integration/branch_worker/test_apply_window_ties.py (a real Redis, a real
bare repository, the hand-driven clock), with the GitTarget's ClusterProvider naming an audit
route and a real ``Attributor`` over the fact streams: every write's fact is stored before its
event, as the audit sender delivers them within a second.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from services.branch_worker.apply_window import ApplyWindowGuard
from services.branch_worker.attribution import Attributor
from services.branch_worker.branch import BranchLoop
from shared.decide.apply_window import BY_AUDIT, EDIT_BY
from shared.model.attribution import AuthorFact
from shared.store.api_edits import ApiEdits
from shared.store.attribution import FactStreams
from shared.store.collisions import Collisions
from shared.store.ledger import Ledger
from tests.integration.branch_worker.conftest import Rig
from tests.integration.branch_worker.test_apply_window import (
    EDIT,
    KS,
    collisions,
    event,
    send_catch_up,
    value_in_git,
)
from tests.integration.branch_worker.test_apply_window_ties import tie

pytestmark = pytest.mark.integration

ROUTE = "prod"
FLUX_USER = "system:serviceaccount:flux-system:kustomize-controller"
#: Far above any wait in these schedules: an event is applied once its fact is read.
GRACE = 60.0


def _fact(rig: Rig, user: str) -> None:
    """The audit fact of the write the next ``event``/``tie`` publishes (its resourceVersion is
    the rig's clock, as ``event`` sets it)."""
    fact = AuthorFact(user, "update", "", "configmaps", "team", "app", "uid-app",
                      str(rig.clock.now), f"a-{rig.clock.now}", "2026-12-01T10:00:05Z")  # fmt: skip
    FactStreams(rig.client, rig.keys).append(ROUTE, {"configmaps": [fact]})


def _attributed(rig: Rig) -> BranchLoop:
    """A loop whose GitTarget names the Kustomization and an audit route."""
    rig.target = replace(rig.target, applier=KS, quiet_period_s=1.0, audit_route=ROUTE)
    rig.configs.publish_target(rig.target)
    guard = ApplyWindowGuard(
        rig.bk,
        appliers=rig.appliers,
        ledger=Ledger(rig.client, rig.keys),
        collisions=Collisions(rig.client, rig.keys),
        clock=rig.clock,
        edits=ApiEdits(rig.client, rig.keys),
    )
    facts = FactStreams(rig.client, rig.keys)
    return rig.loop(guard=guard, attributor=Attributor(facts, rig.clock, GRACE))


def _edit_inside_the_apply(rig: Rig) -> BranchLoop:
    loop = _attributed(rig)
    _fact(rig, "alice")
    event(rig, "first", EDIT)
    rig.drain(loop)
    rig.clock.now += 6.0  # past the 5 s commit window
    loop.flush()
    sent = send_catch_up(rig, loop)
    rig.clock.now = sent + 1.0
    _fact(rig, "alice")
    event(rig, "api", EDIT)  # the API edit, inside the apply
    rig.clock.now += 0.5
    return loop


def _settle(rig: Rig, loop: BranchLoop) -> None:
    rig.drain(loop)
    rig.clock.now += 6.0
    loop.flush()


def test_a_tie_the_audit_fact_gives_the_applier_is_withheld(rig: Rig) -> None:
    loop = _edit_inside_the_apply(rig)
    withheld, ambiguous = collisions("withheld"), collisions("ambiguous")
    _fact(rig, FLUX_USER)  # kustomize-controller's service account made this write
    tie(rig, "first", writers=None)  # a watcher that had just started: no order known
    _settle(rig, loop)
    assert value_in_git(rig) == "api"
    assert (collisions("withheld"), collisions("ambiguous")) == (withheld + 1, ambiguous)
    kept = Collisions(rig.client, rig.keys).latest(rig.bk)[0]
    assert kept.outcome == "withheld"
    assert BY_AUDIT in kept.why


def test_a_tie_the_audit_fact_gives_the_editor_is_mirrored_uncounted(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="services.branch_worker.apply_window")
    loop = _edit_inside_the_apply(rig)
    withheld, ambiguous = collisions("withheld"), collisions("ambiguous")
    _fact(rig, "alice")  # the editor wrote again in the apply's second
    tie(rig, "second edit", writers=None)
    _settle(rig, loop)
    assert value_in_git(rig) == "second edit"
    assert (collisions("withheld"), collisions("ambiguous")) == (withheld, ambiguous)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("apply window")]
    assert said == [  # no collision, but the tie and its deciding fact are logged (the soak)
        "apply window: edit ConfigMap/team/app (same-second tie with kubectl-edit: "
        f"{EDIT_BY} {BY_AUDIT})"
    ]
