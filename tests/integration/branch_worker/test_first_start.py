"""Q5 at a start that finds no tip published (the safety suite's "first start adopts the tip",
docs/safety.md), against real Redis and a real bare repository."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection

import pytest

from services.branch_worker.applied import AppliedRevisions
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from shared.store.leases import Leases
from tests.integration.branch_worker.conftest import Rig
from tests.integration.branch_worker.test_webhook_obligations import ENDPOINT, HOOK, _with_webhook

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")


def _rig_with_applier(rig: Rig) -> None:
    rig.target = dataclasses.replace(rig.target, applier=KS)
    rig.configs.publish_target(rig.target)


def _requests(rig: Rig) -> list[ApplyRequest]:
    return [ApplyRequest.from_json(job.args[0]) for job in rig.attempts.queue().get_jobs()]


def test_an_owner_after_one_that_published_nothing_owes_the_tip_a_foreign_commit(
    rig: Rig,
) -> None:
    """Q5, A1: the first owner took the branch and died before it published a tip; an outside
    push landed and its webhook was stored meanwhile (the next owner skips it). The next owner
    finds the pushed tip, not one of ours, and every applier owes it a ForeignCommit, sent on
    the quiet branch; before the fix it adopted the tip and nobody asked Flux to apply it."""
    _rig_with_applier(rig)
    first = Leases(rig.client, rig.keys, 60_000).acquire(rig.bk, "w-first")
    assert first is not None and first.token == 1
    Leases(rig.client, rig.keys, 60_000).release(first)  # gone before its first publication
    foreign = rig.foreign_push()
    loop = rig.loop("w2")
    assert loop.lease.token == 2
    assert rig.states.read(rig.bk).foreign_tip == foreign
    loop.apply_requests()
    (request,) = _requests(rig)
    assert (request.commit, request.reasons) == (foreign, {"ForeignCommit": [rig.target.uid]})


def test_the_very_first_owner_owes_nothing_when_the_applier_holds_the_tip(rig: Rig) -> None:
    """Q5, issue 23: the branch's first owner asks each applier what it last applied; an install
    whose applier already holds the tip sends no request at all."""
    _rig_with_applier(rig)
    tip = rig.foreign_push()
    asked: list[tuple[ApplierRef, list[str]]] = []

    def applied(ref: ApplierRef, namespaces: Collection[str]) -> str:
        asked.append((ref, list(namespaces)))
        return tip

    loop = rig.loop("w1", applied=applied)
    assert loop.lease.token == 1
    assert asked == [(KS, ["team"])]
    loop.apply_requests()
    assert _requests(rig) == []
    assert (
        json.loads(str(rig.client.get(rig.keys.applier(KS.key)) or "{}")).get("foreign_commit")
        is None
    )


def test_an_outside_push_before_the_very_first_start_is_asked_for(rig: Rig) -> None:
    """issue 23: an outside push lands right after the GitTarget is created and before the
    branch's first owner starts (its webhook is skipped by that start). The applier last
    applied the commit before it, so a ForeignCommit is owed for the tip and sent on the
    quiet branch. Before the fix the first owner adopted the tip and nobody asked."""
    _rig_with_applier(rig)
    installed = rig.head()
    foreign = rig.foreign_push()
    loop = rig.loop("w1", applied=lambda _ref, _namespaces: installed)
    assert loop.lease.token == 1
    loop.apply_requests()
    (request,) = _requests(rig)
    assert (request.commit, request.reasons) == (foreign, {"ForeignCommit": [rig.target.uid]})


def test_an_applier_that_records_nothing_is_asked_at_the_first_start(rig: Rig) -> None:
    """issue 23: a webhook applier records no applied revision (nor does an applier that could
    not be read): the first start owes it a ForeignCommit for the tip."""
    _with_webhook(rig)
    foreign = rig.foreign_push()
    loop = rig.loop("w1", applied=AppliedRevisions(_no_cluster, _no_clusters()))
    loop.apply_requests()
    (request,) = _requests(rig)
    assert (request.commit, request.applier, request.webhook) == (foreign, HOOK, ENDPOINT)


def _no_cluster() -> CrdReader:
    raise AssertionError("a webhook applier is never read from a cluster")


def _no_clusters() -> ClientFactory:
    """A factory that is never used (it builds nothing until asked)."""
    return ClientFactory(Settings(), lambda: 0.0)
