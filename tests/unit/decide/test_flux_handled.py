"""D6 for Flux: when a stamped request counts as finished (``flux_handled``)."""

from __future__ import annotations

import pytest

from shared.decide.attempt import SourceView, flux_handled, holding_revision

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


# A source stamp whose artifact is newer than the commit (issue 12): an outside push landed
# between the attempt's check of the tip (D3) and the source's fetch.

STAMP = "tok"
NEWER = "main@sha1:newer"
OLDER = "main@sha1:older"


def _source(
    handled_at: str = STAMP, revision: str = NEWER, ready: str = "True", current: bool = True
) -> SourceView:
    return SourceView(handled_at, revision, ready, current)


def _handled(attempted: str, ready: str, source: SourceView, *, fetched: bool = False) -> bool:
    holding = holding_revision(STAMP, source, fetched=fetched)
    return flux_handled("stamp-source", STAMP, COMMIT, "", attempted, ready=ready, holding=holding)


def test_the_exact_commit_still_finishes_a_source_stamp_whatever_the_source_says() -> None:
    """D6: a reconcile of the commit's own revision that ended is ours, handled or not."""
    assert _handled(f"main@sha1:{COMMIT}", "True", _source(handled_at="other"))


@pytest.mark.parametrize(
    ("ready", "handled"), [("Unknown", False), ("True", True), ("False", True)]
)
def test_a_newer_artifact_fetched_after_the_stamp_finishes_it_once_its_apply_ended(
    ready: str, handled: bool
) -> None:
    """D6, issue 12: the source handled our stamp and stored an artifact, so it fetched the
    branch after the commit was on it; the Kustomization applies that newer artifact, never
    the commit's own revision, and its reconcile ending finishes the request (W1 stays open
    until then: Ready Unknown is not an end)."""
    assert _handled(NEWER, ready, _source()) is handled


def test_an_older_artifact_does_not_finish_it() -> None:
    """D6: the Kustomization ended a reconcile of a revision other than the source's artifact
    fetched after the stamp (an older one, from before the fetch): not ours."""
    assert not _handled(OLDER, "True", _source())


def test_a_source_that_failed_its_fetch_keeps_an_older_artifact_that_does_not_count() -> None:
    """D6: the source handled our stamp but its fetch failed (Ready False): the artifact it
    keeps is from an earlier fetch, which may lack the commit."""
    assert holding_revision(STAMP, _source(revision=OLDER, ready="False"), fetched=False) == ""
    assert not _handled(OLDER, "True", _source(revision=OLDER, ready="False"))


def test_a_source_that_has_not_handled_the_stamp_yet_does_not_count() -> None:
    """D6: the artifact is from a fetch before the stamp (another token is handled, or none)."""
    for handled_at in ("other", ""):
        assert not _handled(OLDER, "True", _source(handled_at=handled_at, revision=OLDER))


def test_a_suspended_source_or_one_behind_its_spec_does_not_count() -> None:
    """F1: a suspended source copies the token and fetches nothing; its Ready is the old one.
    ``current`` is False then (suspended, or observedGeneration behind the spec)."""
    assert not _handled(OLDER, "True", _source(revision=OLDER, current=False))


def test_once_proved_the_source_holds_the_commit_after_another_stamp_replaced_ours() -> None:
    """D6: every artifact after the fetch that proved it comes from a later fetch; a later
    stamp (a Receiver's) in ``lastHandledReconcileAt`` does not undo that."""
    later = _source(handled_at="receiver", revision="main@sha1:newest")
    assert holding_revision(STAMP, later, fetched=True) == "main@sha1:newest"
    assert _handled("main@sha1:newest", "True", later, fetched=True)
    assert not _handled(NEWER, "True", later, fetched=True)  # the source moved on since
