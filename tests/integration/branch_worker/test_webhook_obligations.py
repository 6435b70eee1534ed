"""A1, D7 in the branch worker: a webhook applier is owed a ForeignCommit (its request carries
the endpoint for the dispatcher) and never a CatchUp after our own pushes.

Real Redis, a real rq queue and a real bare repository, as in ``test_appliers.py``.
"""

from __future__ import annotations

import dataclasses

import pytest

from shared.model.config import ApplierRef
from shared.model.webhook import WebhookEndpoint
from tests.integration.branch_worker.conftest import Rig
from tests.integration.branch_worker.test_appliers import _jobs

pytestmark = pytest.mark.integration

ENDPOINT = WebhookEndpoint("https://deploy.example.com/hook", "deploy-hook", 7.0)
HOOK = ApplierRef("Webhook", "team", ENDPOINT.name, "default")


def _with_webhook(rig: Rig) -> None:
    rig.target = dataclasses.replace(rig.target, applier=HOOK, webhook=ENDPOINT)
    rig.configs.publish_target(rig.target)


def test_a_foreign_commit_is_asked_with_the_endpoint(rig: Rig) -> None:
    _with_webhook(rig)
    loop = rig.loop()
    foreign = rig.foreign_push()
    loop.check_tip()
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"ForeignCommit": [str(rig.target.uid)]}
    assert (request.commit, request.applier, request.webhook) == (foreign, HOOK, ENDPOINT)


def test_our_own_push_owes_a_webhook_nothing(rig: Rig) -> None:
    _with_webhook(rig)
    loop = rig.loop()
    before = rig.commits()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 5
    loop.flush()
    assert len(rig.commits()) == len(before) + 1, "our push happened"
    rig.clock.now += 3600  # far past any quiet period
    loop.apply_requests()
    assert _jobs(rig) == [], "no CatchUp for a webhook (A1, D7)"
    assert rig.client.get(rig.keys.applier(HOOK.key)) is None, "nothing owed, no record"
