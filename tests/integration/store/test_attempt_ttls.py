"""How long an apply attempt's traces stay in Redis (docs/architecture.md "What grows with apply
requests"), on real Redis: rq keeps a finished job ``job_result_ttl`` and a failed one
``job_failure_ttl`` (settings), and each token's outcome guard lives the failure TTL plus the
job timeout, so a failed job requeued from rq-dashboard can never report a second outcome (D1)
whatever the settings say."""

from __future__ import annotations

import pytest
import redis
from rq.job import Job

from shared.model.config import ApplierRef
from shared.model.ids import Branch, BranchKey
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.attempts import FAILURE_TTL_S, JOB_TIMEOUT_S, RESULT_TTL_S, Attempts
from shared.store.keys import Keys

pytestmark = pytest.mark.integration

URL = "https://git.example.com/team/repo.git"


def _request(token: str) -> ApplyRequest:
    return ApplyRequest(
        token,
        Branch(URL, "main").key,
        URL,
        "main",
        "0" * 40,
        {"ForeignCommit": ["uid"]},
        ApplierRef("Kustomization", "ns", "ks", "default"),
        0.0,
    )


@pytest.mark.parametrize(
    ("env", "result_ttl", "failure_ttl"),
    [
        ({}, RESULT_TTL_S, FAILURE_TTL_S),
        (
            {"GITOPS_REVERSER_JOB_RESULT_TTL": "0s", "GITOPS_REVERSER_JOB_FAILURE_TTL": "1h"},
            0,
            3600,
        ),
    ],
)
def test_the_job_ttls_follow_the_settings_and_the_guard_outlives_a_failed_job(
    redis_client: redis.Redis,
    key_prefix: str,
    env: dict[str, str],
    result_ttl: int,
    failure_ttl: int,
) -> None:
    settings = Settings.from_env(env)
    attempts = Attempts(
        redis_client,
        Keys(key_prefix),
        "apply",
        result_ttl_s=int(settings.job_result_ttl.total_seconds()),
        failure_ttl_s=int(settings.job_failure_ttl.total_seconds()),
    )
    queue = attempts.queue()
    try:
        attempts.enqueue(_request("tok-1"))
        job = Job.fetch("attempt-tok-1", connection=queue.connection)
        assert (job.result_ttl, job.failure_ttl) == (result_ttl, failure_ttl)
        outcome = AttemptOutcome("tok-1", "Delivered", finished_at=1.0)
        assert attempts.report_once(BranchKey("bk"), outcome)
        guard = redis_client.ttl(Keys(key_prefix).outcome_guard("tok-1"))
        # at least the failure TTL plus the job timeout (a second may have passed)
        assert failure_ttl + JOB_TIMEOUT_S - 2 <= guard <= failure_ttl + JOB_TIMEOUT_S
        # the guard holds: a requeued run of the same token reports nothing
        assert not attempts.report_once(BranchKey("bk"), outcome)
    finally:
        queue.empty()
