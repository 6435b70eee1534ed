"""A1-A5 in the branch worker: obligations in Redis, requests as rq jobs, outcomes back.

Real Redis, a real rq queue and a real bare repository; the dispatcher's side is played by the
test, which reads the job and reports an outcome on the branch's outcomes stream.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.attempts import job_id
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")  # quietPeriod 30s


def _with_applier(rig: Rig, consent: bool = False) -> None:
    rig.target = dataclasses.replace(
        rig.target, applier=KS, on_refusal="Reapply" if consent else "None"
    )
    rig.configs.publish_target(rig.target)


def _jobs(rig: Rig) -> list[ApplyRequest]:
    queue = rig.attempts.queue()
    return [ApplyRequest.from_json(job.args[0]) for job in queue.get_jobs()]


def _owed(rig: Rig) -> dict[str, object]:
    text = rig.client.get(rig.keys.applier(KS.key))
    return json.loads(str(text)) if text else {}


def test_our_push_owes_a_catch_up_sent_a_quiet_period_after_the_last_write(rig: Rig) -> None:
    _with_applier(rig)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.apply_requests()
    assert _jobs(rig) == [], "never while a window is open"
    write_at = rig.clock.now
    rig.clock.now += 5
    loop.flush()
    head = loop.tip
    assert _owed(rig)["catch_up"] == head
    rig.clock.now = write_at + 29
    loop.apply_requests()
    assert _jobs(rig) == [], "CatchUp waits quietPeriod after the last write (Q2)"
    rig.clock.now = write_at + 30
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"CatchUp": [str(rig.target.uid)]}
    assert request.commit == head and request.applier.name == "apps"
    assert rig.attempts.queue().fetch_job(job_id(request.token)) is not None
    loop.apply_requests()
    assert len(_jobs(rig)) == 1, "one attempt at a time"
    rig.attempts.report(rig.bk, AttemptOutcome(request.token, "Delivered"))
    loop.apply_requests()
    assert _owed(rig) == {}, "Delivered clears what it covered; nothing left, no key"


def test_a_foreign_commit_is_asked_at_once_and_failed_requests_back_off(rig: Rig) -> None:
    _with_applier(rig)
    loop = rig.loop()
    foreign = rig.foreign_push()
    loop.check_tip()
    loop.apply_requests()
    (first,) = _jobs(rig)
    assert first.reasons == {"ForeignCommit": [str(rig.target.uid)]} and first.commit == foreign
    rig.attempts.report(rig.bk, AttemptOutcome(first.token, "Failed", "timeout"))
    loop.apply_requests()
    assert len(_jobs(rig)) == 1, "backing off"
    assert _owed(rig)["failures"] == 1
    rig.clock.now += 5
    loop.apply_requests()
    assert len(_jobs(rig)) == 2, "retried after the backoff"


def test_a_stale_outcome_is_decided_again_without_backoff(rig: Rig) -> None:
    _with_applier(rig)
    loop = rig.loop()
    rig.foreign_push()
    loop.check_tip()
    loop.apply_requests()
    (first,) = _jobs(rig)
    rig.attempts.report(rig.bk, AttemptOutcome(first.token, "Stale"))
    loop.apply_requests()
    assert len(_jobs(rig)) == 2 and _owed(rig)["failures"] == 0


def test_a_refusal_is_owed_only_with_consent(rig: Rig) -> None:
    _with_applier(rig, consent=False)
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.drain(loop)
    loop.apply_requests()
    assert _jobs(rig) == []
    _with_applier(rig, consent=True)
    rig.publish("creds2", "CREATE", kind="Secret", sensitive=True)
    rig.drain(loop)
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"Refusal": [str(rig.target.uid)]}


def test_obligations_of_a_deleted_gittarget_are_dropped(rig: Rig) -> None:
    _with_applier(rig)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 5
    loop.flush()
    assert _owed(rig)["catch_up_uids"] == [str(rig.target.uid)]
    rig.configs.forget_target(rig.target)
    rig.target = dataclasses.replace(rig.target, uid="recreated-uid")  # type: ignore[arg-type]
    rig.configs.publish_target(rig.target)
    rig.clock.now += 60
    loop.apply_requests()
    assert _jobs(rig) == [], "the recreated GitTarget inherits no obligation"


def test_gauges_show_what_is_owed_and_how_long_it_waited_for_quiet(rig: Rig) -> None:
    """O1: obligations owed per reason, and the quiet-branch wait, as gauges."""
    from prometheus_client import REGISTRY

    def sample(name: str, **labels: str) -> float:
        return float(REGISTRY.get_sample_value(name, {"branch": rig.bk, **labels}) or 0.0)

    _with_applier(rig)
    loop = rig.loop()
    rig.foreign_push()
    loop.check_tip()
    rig.publish("app", "CREATE")
    rig.drain(loop)  # a window is open: the ForeignCommit must wait for quiet
    loop.apply_requests()
    assert sample("gitops_reverser_obligations_owed", reason="ForeignCommit") == 1.0
    rig.clock.now += 2
    loop.apply_requests()
    assert sample("gitops_reverser_quiet_wait_seconds") == 2.0
    rig.clock.now += 5
    loop.flush()
    loop.apply_requests()
    assert sample("gitops_reverser_quiet_wait_seconds") == 0.0, "quiet now: the request went out"
    assert len(_jobs(rig)) == 1


APP = ApplierRef("Application", "argocd", "web", "default")


def test_an_application_is_never_owed_a_catch_up_but_gets_foreign_commits(rig: Rig) -> None:
    """A1: our own push owes an Argo CD Application nothing (no key, no job, however long the
    branch stays quiet); a foreign commit reaches it as it reaches a Kustomization."""
    rig.target = dataclasses.replace(rig.target, applier=APP)
    rig.configs.publish_target(rig.target)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 5
    loop.flush()
    rig.clock.now += 3600
    loop.apply_requests()
    assert _jobs(rig) == [], "no CatchUp after our push"
    assert rig.client.get(rig.keys.applier(APP.key)) is None
    foreign = rig.foreign_push()
    loop.check_tip()
    loop.apply_requests()
    (request,) = _jobs(rig)
    assert request.reasons == {"ForeignCommit": [str(rig.target.uid)]}
    assert (request.commit, request.applier) == (foreign, APP)
