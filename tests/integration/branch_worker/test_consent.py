"""S1/A5 at the decision, in the branch worker: consent and a standing refusal are read from
the config the worker has in Redis when it decides a Refusal (issue 12 part 3).

Real Redis, a real rq queue and a real bare repository; the dispatcher's side is not run: the
test reads the jobs the worker enqueued.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")  # quietPeriod 30s


def _consent(rig: Rig, consent: bool) -> None:
    rig.target = dataclasses.replace(
        rig.target, applier=KS, on_refusal="Reapply" if consent else "None"
    )
    rig.configs.publish_target(rig.target)


def _jobs(rig: Rig) -> list[ApplyRequest]:
    return [ApplyRequest.from_json(job.args[0]) for job in rig.attempts.queue().get_jobs()]


def _owed(rig: Rig) -> dict[str, object]:
    text = rig.client.get(rig.keys.applier(KS.key))
    return json.loads(str(text)) if text else {}


def test_consent_withdrawn_while_busy_sends_no_refusal_but_the_catch_up(rig: Rig) -> None:
    """S1, A5, A1: a refused Secret owes a Refusal; a ConfigMap write keeps the branch busy;
    consent is withdrawn meanwhile. Once quiet no Refusal is asked, the obligation is gone,
    and the CatchUp our push owes goes out alone a quiet period after the write."""
    _consent(rig, True)
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    assert _owed(rig)["refusals"] == [str(rig.target.uid)]
    loop.apply_requests()
    assert _jobs(rig) == [], "never while a window is open"
    write_at = rig.clock.now
    _consent(rig, False)
    rig.clock.now += 5
    loop.flush()
    loop.apply_requests()
    assert _jobs(rig) == [], "no Refusal once consent is gone; the CatchUp waits its period"
    assert _owed(rig)["refusals"] == []
    rig.clock.now = write_at + 30
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"CatchUp": [str(rig.target.uid)]}


def test_with_consent_kept_the_refusal_goes_out_with_the_catch_up(rig: Rig) -> None:
    """The same schedule with consent kept: the Refusal is asked at once on the quiet branch,
    and the CatchUp rides along (A2), which shows the case above can fail."""
    _consent(rig, True)
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 5
    loop.flush()
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert set(request.reasons) == {"Refusal", "CatchUp"}


def test_a_refusal_lifted_before_the_decision_is_not_sent(rig: Rig) -> None:
    """A5: the refusal no longer stands when the owner decides (its record was lifted, as a
    DELETE of the Secret or a cleaned folder does): the Refusal is dropped unsent, consent or
    not. A template problem (T4) is no refused edit and owes nothing either."""
    _consent(rig, True)
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.drain(loop)
    for key in rig.configs.refusals(rig.target.uid):
        rig.configs.clear_refusal(rig.target.uid, key=key)
    rig.configs.set_refusal(rig.target.uid, "InvalidCommitTemplate", "bad", key="template")
    loop.apply_requests()
    assert _jobs(rig) == []
    assert _owed(rig) == {}
