"""Two installs on one Redis (O4): the apply queue is formed under each install's key prefix,
so a dispatcher of one install never takes an attempt of the other, even with the same
``apply_queue`` setting (the chart leaves it at its default)."""

from __future__ import annotations

import redis

from shared.model.config import ApplierRef
from shared.model.ids import Branch
from shared.model.requests import ApplyRequest
from shared.store.attempts import Attempts
from shared.store.keys import Keys

URL = "https://git.example.com/team/repo.git"


def test_two_prefixes_have_two_queues(redis_client: redis.Redis, key_prefix: str) -> None:
    """O4: each install's queue holds only its own job, under its prefix."""
    first = Attempts(redis_client, Keys(f"{key_prefix}:a"), "apply-attempts")
    second = Attempts(redis_client, Keys(f"{key_prefix}:b"), "apply-attempts")
    try:
        request = ApplyRequest(
            "tok-a",
            Branch(URL, "main").key,
            URL,
            "main",
            "0" * 40,
            {"ForeignCommit": ["uid"]},
            ApplierRef("Kustomization", "ns", "ks", "default"),
            0.0,
        )
        first.enqueue(request)
        assert first.queue().name == f"{key_prefix}:a:queue:apply-attempts"
        assert first.queue().job_ids == ["attempt-tok-a"]
        assert second.queue().job_ids == []
    finally:
        first.queue().empty()
        second.queue().empty()
