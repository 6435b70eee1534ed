"""Settings come from GITOPS_REVERSER_* variables only, and bad values stop the process early."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.model.duration import DurationError, parse_duration
from shared.settings import Settings, SettingsError


def test_defaults_without_environment() -> None:
    settings = Settings.from_env({})
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.steady_tick == timedelta(seconds=60)
    assert settings.max_body_bytes == 3 * 1024 * 1024
    assert settings.apply_queue == "apply-attempts"


def test_values_are_parsed_by_type() -> None:
    settings = Settings.from_env(
        {
            "GITOPS_REVERSER_REDIS_URL": "redis://10.0.0.1:6380/2",
            "GITOPS_REVERSER_STEADY_TICK": "1m30s",
            "GITOPS_REVERSER_MAX_BODY_BYTES": "1024",
            "GITOPS_REVERSER_LOG_LEVEL": "debug",
        }
    )
    assert settings.redis_url == "redis://10.0.0.1:6380/2"
    assert settings.steady_tick == timedelta(seconds=90)
    assert settings.max_body_bytes == 1024
    assert settings.log_level == "DEBUG"
    assert settings.redis_min_replicas == 0


def test_a_sentinel_url_and_min_replicas_are_accepted() -> None:
    url = "rediss+sentinel://:pw@s1:26379,s2:26380/mymaster/2"
    settings = Settings.from_env(
        {"GITOPS_REVERSER_REDIS_URL": url, "GITOPS_REVERSER_REDIS_MIN_REPLICAS": "1"}
    )
    assert (settings.redis_url, settings.redis_min_replicas) == (url, 1)


def test_settings_are_frozen() -> None:
    settings = Settings.from_env({})
    with pytest.raises(AttributeError):
        settings.redis_url = "redis://elsewhere"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("GITOPS_REVERSER_STEADY_TICK", "soon", "GITOPS_REVERSER_STEADY_TICK='soon'"),
        ("GITOPS_REVERSER_MAX_BODY_BYTES", "-1", "must not be negative"),
        ("GITOPS_REVERSER_MAX_BODY_BYTES", "0", "MAX_BODY_BYTES must be positive"),
        ("GITOPS_REVERSER_REDIS_URL", "localhost:6379", "REDIS_URL"),
        (
            "GITOPS_REVERSER_REDIS_URL",
            "redis+sentinel://s1:26379",
            "REDIS_URL: a Sentinel URL's path",
        ),
        ("GITOPS_REVERSER_REDIS_URL", "redis+sentinel:///mymaster/0", "at least one sentinel"),
        ("GITOPS_REVERSER_REDIS_MIN_REPLICAS", "-1", "must not be negative"),
        ("GITOPS_REVERSER_LOG_LEVEL", "chatty", "LOG_LEVEL"),
        ("GITOPS_REVERSER_STEADY_TICK", "0s", "durations must be positive"),
        ("GITOPS_REVERSER_BRANCH_THREADS", "0", "BRANCH_THREADS must be positive"),
        ("GITOPS_REVERSER_MAX_BRANCHES", "0", "MAX_BRANCHES must be positive"),
        ("GITOPS_REVERSER_STEADY_TIK", "5s", "unknown setting(s): GITOPS_REVERSER_STEADY_TIK"),
    ],
)
def test_invalid_values_fail_at_start_and_name_the_variable(
    name: str, value: str, fragment: str
) -> None:
    with pytest.raises(SettingsError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_env({name: value})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("5s", 5.0), ("1m30s", 90.0), ("250ms", 0.25), ("1h", 3600.0), ("1.5s", 1.5)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "-5s", "5 s", "5d", "1m30"])
def test_go_durations_refused(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_the_job_ttls_default_to_ten_minutes_and_a_day_and_parse_durations() -> None:
    """docs/architecture.md "What grows with apply requests": rq keeps a finished attempt ten
    minutes and a failed one a day unless told otherwise."""
    default = Settings.from_env({})
    assert (default.job_result_ttl, default.job_failure_ttl) == (
        timedelta(minutes=10),
        timedelta(hours=24),
    )
    settings = Settings.from_env(
        {"GITOPS_REVERSER_JOB_RESULT_TTL": "30s", "GITOPS_REVERSER_JOB_FAILURE_TTL": "2h"}
    )
    assert (settings.job_result_ttl, settings.job_failure_ttl) == (
        timedelta(seconds=30),
        timedelta(hours=2),
    )
    with pytest.raises(SettingsError, match="JOB_FAILURE_TTL"):
        Settings.from_env({"GITOPS_REVERSER_JOB_FAILURE_TTL": "a day"})
