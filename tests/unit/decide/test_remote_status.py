"""When status.remote is written (P10): a new revision or a new way of verifying at once, the
same one only once ``lastVerifiedAt`` is ``REFRESH_S`` behind."""

from __future__ import annotations

from shared.decide.remote_status import REFRESH_S, remote_status
from shared.model.remote import RemoteVerified
from shared.model.times import rfc3339

A, B = "a" * 40, "b" * 40
T = 1_900_000_000.0


def test_nothing_verified_writes_nothing() -> None:
    assert remote_status(None, None) is None
    assert remote_status(None, {"revision": A}) is None


def test_a_first_verification_is_written() -> None:
    wanted = remote_status(RemoteVerified(A, T, "Push"), None)
    assert wanted == {"revision": A, "lastVerifiedAt": rfc3339(T), "verifiedBy": "Push"}


def test_a_new_revision_or_method_is_written_at_once() -> None:
    stored = RemoteVerified(A, T, "Push").to_status()
    assert remote_status(RemoteVerified(B, T + 1, "Push"), stored) is not None
    assert remote_status(RemoteVerified(A, T + 1, "Fetch"), stored) == {
        "revision": A,
        "lastVerifiedAt": rfc3339(T + 1),
        "verifiedBy": "Fetch",
    }


def test_the_same_revision_is_refreshed_only_when_behind() -> None:
    stored = RemoteVerified(A, T, "Fetch").to_status()
    assert remote_status(RemoteVerified(A, T + 60, "Fetch"), stored) is None
    assert remote_status(RemoteVerified(A, T + REFRESH_S - 1, "Fetch"), stored) is None
    later = remote_status(RemoteVerified(A, T + REFRESH_S, "Fetch"), stored)
    assert later is not None and later["lastVerifiedAt"] == rfc3339(T + REFRESH_S)


def test_an_unreadable_stored_time_is_rewritten() -> None:
    stored = {"revision": A, "verifiedBy": "Fetch", "lastVerifiedAt": "yesterday"}
    assert remote_status(RemoteVerified(A, T, "Fetch"), stored) is not None


def test_the_record_round_trips_and_refuses_what_it_is_not() -> None:
    record = RemoteVerified(A, T, "Push")
    assert RemoteVerified.from_json(record.to_json()) == record
    assert RemoteVerified.from_json('["x", 1, "Pull"]') is None
    assert RemoteVerified.from_json("not json") is None
    assert RemoteVerified.from_json("[1, 2]") is None
