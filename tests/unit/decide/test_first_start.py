"""Q5, A1 at a branch's very first start (issue 23, finding 12), as pure rules: an applier owes a
ForeignCommit for the tip exactly when the commit it last applied is not the tip, and what each
kind records as applied."""

from __future__ import annotations

from typing import Any

from shared.decide.argo import synced_commit
from shared.decide.attempt import flux_applied
from shared.decide.tips import first_start_owes

TIP = "b" * 40
OLD = "a" * 40


def test_an_applier_at_the_tip_owes_nothing() -> None:
    assert not first_start_owes(TIP, TIP)


def test_an_applier_behind_the_tip_owes_a_foreign_commit() -> None:
    """The outside push made before the first start: applied is the older commit."""
    assert first_start_owes(TIP, OLD)


def test_an_applier_that_records_nothing_is_owed() -> None:
    """A webhook applier, one that never applied, or one that could not be read."""
    assert first_start_owes(TIP, None)
    assert first_start_owes(TIP, "")


def test_a_branch_without_a_tip_owes_nothing() -> None:
    assert not first_start_owes(None, None)
    assert not first_start_owes("", OLD)


def test_a_kustomization_records_its_last_applied_revision() -> None:
    """facts F2: ``[<ref>@]<algo>:<hex>``; lastAttemptedRevision is not an apply."""
    applied = {"status": {"lastAppliedRevision": f"main@sha1:{OLD}"}}
    attempted = {"status": {"lastAttemptedRevision": f"main@sha1:{TIP}"}}
    assert flux_applied(applied) == OLD
    assert flux_applied(attempted) == ""
    assert flux_applied({}) == ""
    assert flux_applied({"status": None}) == ""


def _app(phase: str, revision: str, history: list[str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "sync": {"status": "OutOfSync", "revision": TIP},  # the last comparison, not an apply
        "operationState": {"phase": phase, "syncResult": {"revision": revision}},
    }
    if history is not None:
        status["history"] = [{"id": i, "revision": r} for i, r in enumerate(history)]
    return {"status": status}


def test_an_application_records_its_last_successful_sync() -> None:
    assert synced_commit(_app("Succeeded", OLD)) == OLD
    assert synced_commit(_app("Failed", TIP, history=["c" * 40, OLD])) == OLD
    assert synced_commit(_app("Running", TIP)) == ""
    assert synced_commit({"status": {"sync": {"revision": TIP}}}) == ""
    assert synced_commit({}) == ""
