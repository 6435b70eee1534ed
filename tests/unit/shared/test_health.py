"""``/healthz``, ``/readyz`` and ``/metrics`` of the non-HTTP processes (shared/health.py, O1,
issue 13): readiness runs every check under one deadline, and a hung check neither holds the
answer nor piles up threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from werkzeug.test import Client

from shared.health import Check, Health, app


def _ok() -> str | None:
    return None


def _down() -> str | None:
    return "Redis unreachable (ConnectionError)"


def _raises() -> str | None:
    raise RuntimeError("probe broke")


def test_every_check_passing_is_ready() -> None:
    found = Health([Check("redis", _ok), Check("kubernetes", _ok)]).readiness()
    assert found.ready
    assert found.results == {"redis": "ok", "kubernetes": "ok"}


def test_one_failing_check_is_not_ready_and_is_named() -> None:
    found = Health([Check("redis", _down), Check("kubernetes", _ok)]).readiness()
    assert not found.ready
    assert found.reason() == "redis: Redis unreachable (ConnectionError); kubernetes: ok"


def test_a_probe_that_raises_is_a_failed_check() -> None:
    found = Health([Check("leases", _raises)]).readiness()
    assert not found.ready
    assert found.results == {"leases": "RuntimeError: probe broke"}


@pytest.fixture
def release() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()  # let the hung probe's thread end


def test_a_hung_probe_fails_at_the_deadline_and_is_not_started_again(
    release: threading.Event,
) -> None:
    calls: list[int] = []

    def hung() -> str | None:
        calls.append(1)
        release.wait()
        return None

    health = Health([Check("kubernetes", hung), Check("redis", _ok)], deadline_s=0.01)
    first = health.readiness()
    second = health.readiness()
    assert not first.ready and not second.ready
    assert first.results["kubernetes"] == "no answer within 0.01s"
    assert second.results["redis"] == "ok"
    assert calls == [1], "a probe still running is waited on, not started twice"


def test_a_finished_probe_is_run_again_on_the_next_request() -> None:
    answers = iter([_down(), None])
    health = Health([Check("redis", lambda: next(answers))])
    assert not health.readiness().ready
    assert health.readiness().ready


def test_healthz_answers_alive_whatever_the_checks_say() -> None:
    client = Client(app(Health([Check("redis", _down)])))
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json == {"status": "ok", "reason": "alive"}


def test_readyz_is_200_when_ready_and_503_naming_the_check_when_not() -> None:
    ready = Client(app(Health([Check("redis", _ok)]))).get("/readyz")
    assert (ready.status_code, ready.json) == (200, {"status": "ok", "reason": "redis: ok"})
    down = Client(app(Health([Check("redis", _down)]))).get("/readyz")
    assert down.status_code == 503
    assert down.json is not None and down.json["status"] == "unavailable"
    assert "Redis unreachable" in down.json["reason"]


def test_other_paths_are_the_metrics_exposition() -> None:
    answer = Client(app(Health([]))).get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert b"# TYPE" in answer.data


def test_the_metrics_say_which_readiness_check_fails_at_the_scrape() -> None:
    """Issue 26: "Redis unreachable" is alertable as ``readiness_check_ok{check="redis"} == 0``;
    the checks run when Prometheus scrapes, so the value is the one of that moment."""
    state = {"redis": _down}

    def redis() -> str | None:
        return state["redis"]()

    health = Health([Check("redis", redis), Check("kubernetes", _ok)])
    client = Client(app(health))
    text = client.get("/metrics").data.decode()
    assert 'gitops_reverser_readiness_check_ok{check="redis"} 0.0' in text
    assert 'gitops_reverser_readiness_check_ok{check="kubernetes"} 1.0' in text
    state["redis"] = _ok
    text = client.get("/metrics").data.decode()
    assert 'gitops_reverser_readiness_check_ok{check="redis"} 1.0' in text
