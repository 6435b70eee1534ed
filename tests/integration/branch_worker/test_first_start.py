"""Q5 at a start that finds no tip published (the safety suite's "first start adopts the tip",
docs/safety.md), against real Redis and a real bare repository."""

from __future__ import annotations

import dataclasses
import json

import pytest

from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.store.leases import Leases
from tests.integration.branch_worker.conftest import Rig

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


def test_the_very_first_owner_adopts_the_tip_without_a_request(rig: Rig) -> None:
    """Q5: the branch's first owner takes what Git holds when the product starts as its
    baseline (no earlier owner can have skipped a notice): nothing is owed."""
    _rig_with_applier(rig)
    rig.foreign_push()
    loop = rig.loop("w1")
    assert loop.lease.token == 1
    loop.apply_requests()
    assert _requests(rig) == []
    assert (
        json.loads(str(rig.client.get(rig.keys.applier(KS.key)) or "{}")).get("foreign_commit")
        is None
    )
