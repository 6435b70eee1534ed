"""W1-W2 as a pure rule: every case the seed names, table-driven, with an injected clock."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from shared.decide.apply_window import (
    AFTER_FINISH_S,
    ApplyWindow,
    Verdict,
    asks_change,
    asks_history,
    decide,
    entry_time,
    is_api_edit,
    managers_of,
    may_be_withheld,
    window_in_force,
    write_bound,
)
from shared.model.events import ManagerEntry, Operation

SENT = 1_000.0  # the request went out at this clock reading
SECOND = "2026-12-01T10:00:05Z"
FLUX = (ManagerEntry("kustomize-controller", "Apply", SECOND),)
ARGO_SSA = (ManagerEntry("argocd-controller", "Apply", SECOND),)
ARGO_UA = (ManagerEntry("argocd-application-controller", "Update", SECOND),)
ARGO_BOTH = ARGO_SSA + ARGO_UA
KUBECTL = (ManagerEntry("kubectl-edit", "Update", SECOND),)
TIE = FLUX + KUBECTL
OUT = ApplyWindow(SENT)
FINISHED = ApplyWindow(SENT, SENT + 4.0)


@dataclass(frozen=True)
class Case:
    name: str
    expected: Verdict
    newest: tuple[ManagerEntry, ...] = FLUX
    kind: str | None = "Kustomization"
    window: ApplyWindow | None = OUT
    edited: float | None = SENT + 1.0
    now: float = SENT + 3.0
    operation: Operation = "UPDATE"
    older: bool = False  # the object is what Git held at an older commit, not at the tip
    unchanged: bool = False  # Git already holds the object as it is: the write changes nothing


CASES = [
    Case("W1 Flux reverts an API edit while the request is out", Verdict.WITHHELD),
    Case("W1 a create by the applier after an API delete", Verdict.WITHHELD, operation="CREATE"),
    Case(
        "W1 within 10 s after the request finished",
        Verdict.WITHHELD,
        window=FINISHED,
        now=FINISHED.finished_at + AFTER_FINISH_S - 0.5,  # type: ignore[operator]
    ),
    Case(
        "W1 10 s after the request finished the window is shut",
        Verdict.MIRROR,
        window=FINISHED,
        now=FINISHED.finished_at + AFTER_FINISH_S,  # type: ignore[operator]
    ),
    Case("W1 Argo CD server-side apply", Verdict.WITHHELD, newest=ARGO_SSA, kind="Application"),
    Case("W1 Argo CD by User-Agent", Verdict.WITHHELD, newest=ARGO_UA, kind="Application"),
    Case("W1 both Argo CD managers", Verdict.WITHHELD, newest=ARGO_BOTH, kind="Application"),
    Case("W1 another applier's manager", Verdict.MIRROR, newest=FLUX, kind="Application"),
    Case("W1 Argo CD's manager on a Flux folder", Verdict.MIRROR, newest=ARGO_SSA),
    Case("W1 a webhook applier proves nothing", Verdict.MIRROR, kind="Webhook"),
    Case("W1 the API edit itself is mirrored", Verdict.MIRROR, newest=KUBECTL),
    Case("W1 outside the applier's folders", Verdict.MIRROR, kind=None),
    Case("W1 no request ever sent", Verdict.MIRROR, window=None),
    Case("W1 a request sent after the event", Verdict.MIRROR, now=SENT - 1.0, edited=SENT - 2.0),
    Case("W1 no API edit seen", Verdict.MIRROR, edited=None),
    Case("W1 the API edit came before the request", Verdict.MIRROR, edited=SENT - 0.5),
    Case("W1 an API edit at the very send is not after it", Verdict.MIRROR, edited=SENT),
    Case("W2 a same-second tie with another manager", Verdict.AMBIGUOUS, newest=TIE),
    Case("W2 a tie with no API edit seen is no collision", Verdict.MIRROR, newest=TIE, edited=None),
    Case("W2 a DELETE is never withheld", Verdict.MIRROR, operation="DELETE"),
    Case("W2 a DELETE with a tie neither", Verdict.MIRROR, operation="DELETE", newest=TIE),
    Case("W1 no managedFields at all", Verdict.MIRROR, newest=()),
    # An applier that applied an artifact older than the tip (the safety suite's "written
    # twice": an outside push landed after Flux fetched its source).
    Case("W1 an older commit's content", Verdict.HISTORICAL, edited=None, older=True),
    Case(
        "W1 an older commit's content, the edit before the request",
        Verdict.HISTORICAL,
        edited=SENT - 0.5,
        older=True,
    ),
    Case(
        "W1 an older commit's content after the finish",
        Verdict.HISTORICAL,
        edited=None,
        older=True,
        window=FINISHED,
        now=FINISHED.finished_at + AFTER_FINISH_S - 0.5,  # type: ignore[operator]
    ),
    Case(
        "W1 an older commit's content by Argo CD",
        Verdict.HISTORICAL,
        newest=ARGO_BOTH,
        kind="Application",
        edited=None,
        older=True,
    ),
    Case("W1 a revert of an edit stays withheld", Verdict.WITHHELD, older=True),
    Case("W1 the tip's content is mirrored", Verdict.MIRROR, edited=None, older=False),
    Case(
        "W1 an older commit's content with the window shut",
        Verdict.MIRROR,
        edited=None,
        older=True,
        window=FINISHED,
        now=FINISHED.finished_at + AFTER_FINISH_S,  # type: ignore[operator]
    ),
    Case("W1 an older commit's content, no window", Verdict.MIRROR, window=None, older=True),
    Case("W1 an older commit's content outside the folders", Verdict.MIRROR, kind=None, older=True),
    Case(
        "W2 an older commit's content in a tie is mirrored",
        Verdict.MIRROR,
        newest=TIE,
        edited=None,
        older=True,
    ),
    Case(
        "W2 an older commit's content by another manager",
        Verdict.MIRROR,
        newest=KUBECTL,
        edited=None,
        older=True,
    ),
    Case(
        "W2 a DELETE of an older commit's object is never withheld",
        Verdict.MIRROR,
        operation="DELETE",
        edited=None,
        older=True,
    ),
    # Issue 23: a write that changes no value reverts nothing (an apply of a tip that already holds
    # the API edit; Flux merging the kubectl entries into its own), whatever its time says.
    Case("W2 a no-op apply after an API edit", Verdict.MIRROR, unchanged=True),
    Case(
        "W2 a no-op apply within 10 s after the finish",
        Verdict.MIRROR,
        window=FINISHED,
        now=FINISHED.finished_at + AFTER_FINISH_S - 0.5,  # type: ignore[operator]
        unchanged=True,
    ),
    Case(
        "W2 a no-op Argo CD sync",
        Verdict.MIRROR,
        newest=ARGO_BOTH,
        kind="Application",
        unchanged=True,
    ),
    Case("W2 a no-op write in a tie is no collision", Verdict.MIRROR, newest=TIE, unchanged=True),
    Case("W2 a no-op write is never historical", Verdict.MIRROR, edited=None, unchanged=True),
    Case("W2 a DELETE of an unchanged object", Verdict.MIRROR, operation="DELETE", unchanged=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_apply_window_decides_each_case(case: Case) -> None:
    """W1-W2: withheld only with proof; a tie is mirrored but counted; a DELETE never withheld."""
    decision = decide(
        operation=case.operation,
        newest=case.newest,
        applier_kind=case.kind,
        window=case.window,
        api_edited_at=case.edited,
        now=case.now,
        older_only=case.older,
        unchanged=case.unchanged,
    )
    assert decision.verdict is case.expected, decision.why
    withheld = case.expected in (Verdict.WITHHELD, Verdict.HISTORICAL)
    assert decision.mirrored is not withheld
    assert decision.collision is (case.expected is not Verdict.MIRROR)


def test_the_window_opens_at_the_send_and_shuts_ten_seconds_after_the_finish() -> None:
    """W1: out means open; finished means open for AFTER_FINISH_S more."""
    assert AFTER_FINISH_S == 10.0
    assert not OUT.open_at(SENT - 0.001)
    assert OUT.open_at(SENT) and OUT.open_at(SENT + 3600)
    assert FINISHED.open_at(SENT + 4.0 + 9.999)
    assert not FINISHED.open_at(SENT + 4.0 + 10.0)


@pytest.mark.parametrize(
    ("operation", "newest", "kind", "expected"),
    [
        ("UPDATE", KUBECTL, "Kustomization", True),
        ("UPDATE", FLUX, "Kustomization", False),
        ("UPDATE", TIE, "Kustomization", True),
        ("UPDATE", FLUX, "Application", True),
        ("UPDATE", ARGO_BOTH, "Application", False),
        ("UPDATE", (), "Kustomization", True),
        ("DELETE", FLUX, "Kustomization", True),
        ("CREATE", KUBECTL, "Webhook", True),
    ],
)
def test_what_counts_as_an_api_edit(
    operation: Operation, newest: tuple[ManagerEntry, ...], kind: str, expected: bool
) -> None:
    """W1: an edit the applier did not make alone is the API side's."""
    assert is_api_edit(operation, newest, kind) is expected


def test_each_applier_kind_has_its_own_managers() -> None:
    """W1: kustomize-controller for Flux; argocd-controller or argocd-application-controller."""
    assert managers_of("Kustomization") == {"kustomize-controller"}
    assert managers_of("Application") == {"argocd-controller", "argocd-application-controller"}
    assert managers_of("Webhook") == frozenset()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_history_is_asked_for_only_when_the_verdict_depends_on_it(case: Case) -> None:
    """W1 (historical), kept cheap: the branch's history is read only for an applier-only write
    inside an open window with no API edit since the request was sent, exactly the inputs
    whose verdict ``older_only`` changes."""
    asked = asks_history(
        operation=case.operation,
        newest=case.newest,
        applier_kind=case.kind,
        window=case.window,
        api_edited_at=case.edited,
        now=case.now,
    )
    verdicts = {
        decide(
            operation=case.operation,
            newest=case.newest,
            applier_kind=case.kind,
            window=case.window,
            api_edited_at=case.edited,
            now=case.now,
            older_only=older,
        ).verdict
        for older in (False, True)
    }
    assert asked is (len(verdicts) == 2)
    if asked:
        assert verdicts == {Verdict.MIRROR, Verdict.HISTORICAL}


def judged(case: Case, *, unchanged: bool) -> Verdict:
    """``decide``'s verdict for ``case``, with ``unchanged`` as given."""
    return decide(
        operation=case.operation,
        newest=case.newest,
        applier_kind=case.kind,
        window=case.window,
        api_edited_at=case.edited,
        now=case.now,
        older_only=case.older,
        unchanged=unchanged,
    ).verdict


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_work_tree_is_asked_for_only_when_the_verdict_depends_on_it(case: Case) -> None:
    """W2 (a write that changes no value), kept cheap: whether Git already holds the object
    is asked only for an event the window would otherwise withhold or count, exactly the
    inputs whose verdict ``unchanged`` changes; a write that changes nothing is never a
    collision."""
    asked = asks_change(
        operation=case.operation,
        newest=case.newest,
        applier_kind=case.kind,
        window=case.window,
        api_edited_at=case.edited,
        now=case.now,
        older_only=case.older,
    )
    verdicts = {judged(case, unchanged=same) for same in (False, True)}
    assert asked is (len(verdicts) == 2)
    assert judged(case, unchanged=True) is Verdict.MIRROR


def test_a_write_is_bounded_by_its_managed_fields_second_by_its_observation_and_by_now() -> None:
    """W1 is judged at the write: the end of its newest entries' second, when the watcher
    observed it, or now, whichever is earliest; a time that does not parse bounds nothing."""
    written = entry_time(SECOND)
    assert written is not None
    assert write_bound(FLUX, observed_at=written + 30.0, now=written + 40.0) == written + 1.0
    assert write_bound(FLUX, observed_at=written + 0.2, now=written + 40.0) == written + 0.2
    assert write_bound(FLUX, observed_at=written + 30.0, now=written + 0.5) == written + 0.5
    garbled = (ManagerEntry("kustomize-controller", "Apply", "yesterday"),)
    assert write_bound(garbled, observed_at=SENT + 7.0, now=SENT + 9.0) == SENT + 7.0
    assert entry_time("2026-12-01T10:00:05") is None  # no zone: not a managedFields time


def test_the_window_in_force_is_the_latest_request_sent_by_the_write() -> None:
    """A request sent after the write cannot be what wrote it; of the others the latest
    counts (an edit before it is in the commit it applies)."""
    older, newer, later = ApplyWindow(SENT - 60.0, SENT - 50.0), FINISHED, ApplyWindow(SENT + 9.0)
    windows = [later, older, newer]
    assert window_in_force(windows, SENT + 2.0) == newer
    assert window_in_force(windows, SENT + 9.0) == later
    assert window_in_force(windows, SENT - 55.0) == older
    assert window_in_force(windows, SENT - 61.0) is None
    assert window_in_force([], SENT) is None


def test_only_an_appliers_write_may_be_withheld_whatever_its_gittargets_applier() -> None:
    """U1 keys an applier's write apart from the API edits before it (shared.store.streams);
    a same-second tie too, since a fact may decide it is the applier's write (W2)."""
    assert may_be_withheld("UPDATE", FLUX)
    assert may_be_withheld("CREATE", ARGO_BOTH)
    assert may_be_withheld("UPDATE", TIE)
    assert not may_be_withheld("UPDATE", KUBECTL)
    assert not may_be_withheld("DELETE", FLUX)
    assert not may_be_withheld("UPDATE", ())
