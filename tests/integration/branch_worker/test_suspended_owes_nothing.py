"""P7 in the branch worker: a suspended GitTarget owes its applier nothing. Real Redis, a real
rq queue and a real bare repository; the test reads the jobs the worker enqueued."""

from __future__ import annotations

import dataclasses
import json

import pytest

from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")


def _publish(rig: Rig, **changes: object) -> None:
    rig.target = dataclasses.replace(rig.target, applier=KS, **changes)  # type: ignore[arg-type]
    rig.configs.publish_target(rig.target)


def _jobs(rig: Rig) -> list[ApplyRequest]:
    return [ApplyRequest.from_json(job.args[0]) for job in rig.attempts.queue().get_jobs()]


def _owed(rig: Rig) -> dict[str, object]:
    text = rig.client.get(rig.keys.applier(KS.key))
    return json.loads(str(text)) if text else {}


def test_what_was_owed_before_the_suspension_is_dropped_and_nothing_is_asked(rig: Rig) -> None:
    """A consented Refusal and a CatchUp are owed; the GitTarget is suspended before the
    branch is quiet long enough: nothing is asked, then or later, and the obligations go."""
    _publish(rig, on_refusal="Reapply")
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 5
    loop.flush()
    uid = str(rig.target.uid)
    assert (_owed(rig)["refusals"], _owed(rig)["catch_up_uids"]) == ([uid], [uid])
    _publish(rig, on_refusal="Reapply", suspended=True)
    for _ in range(3):
        rig.clock.now += 60
        loop.apply_requests()
    assert _jobs(rig) == []
    assert _owed(rig) == {}, "the record goes once nothing is owed"


def test_a_push_while_suspended_owes_no_catch_up_and_resuming_asks_again(rig: Rig) -> None:
    """A push of another GitTarget's writes owes a CatchUp only to GitTargets not suspended;
    once resumed, the next push owes this one's again."""
    _publish(rig, suspended=True)
    loop = rig.loop()
    other = dataclasses.replace(
        rig.target, uid="gt-uid-2", name="gt2", path="more", suspended=False, applier=None
    )  # type: ignore[arg-type]
    rig.configs.publish_target(other)
    loop.desk.on_pushed(rig.head())
    rig.clock.now += 60
    loop.apply_requests()
    assert _jobs(rig) == [] and _owed(rig).get("catch_up_uids", []) == []
    _publish(rig, suspended=False)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    rig.clock.now += 60
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"CatchUp": [str(rig.target.uid)]}
