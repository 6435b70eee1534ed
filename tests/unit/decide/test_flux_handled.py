"""D6 for Flux: when a stamped request counts as finished (``flux_handled``)."""

from __future__ import annotations

import pytest

from shared.decide.attempt import flux_handled

COMMIT = "c0ffee"


@pytest.mark.parametrize(
    ("ready", "handled"), [("Unknown", False), ("", False), ("True", True), ("False", True)]
)
def test_a_source_stamp_is_handled_once_the_reconcile_that_attempted_the_commit_ended(
    ready: str, handled: bool
) -> None:
    """D6, W1: ``lastAttemptedRevision`` is written before Flux builds and applies (facts F3),
    while ``Ready`` is Unknown; only a Ready of True or False says that reconcile ended. Taking
    the attempted revision alone as the finish closed the apply window 10 s after the
    apply *started* (the window search's kept schedule ``SLOW_APPLY``)."""
    attempted = f"main@sha1:{COMMIT}"
    assert flux_handled("stamp-source", "tok", COMMIT, "", attempted, ready=ready) is handled


def test_a_source_stamp_is_not_handled_by_an_other_revision() -> None:
    """D6: a reconcile that ended on another revision is not ours."""
    assert not flux_handled("stamp-source", "tok", COMMIT, "", "main@sha1:beef", ready="True")


def test_a_kustomization_stamp_is_handled_when_its_token_is_handled() -> None:
    """D6: ``lastHandledReconcileAt`` is written at the end of the reconcile (facts F1)."""
    assert flux_handled("stamp-kustomization", "tok", COMMIT, "tok", "", ready="Unknown")
    assert not flux_handled("stamp-kustomization", "tok", COMMIT, "old", "", ready="True")
