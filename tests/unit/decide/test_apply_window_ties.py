"""W2: a same-second tie decided where a fact decides it (shared.decide.apply_window).

The watch's order (``writers_of``: which managers' entries moved since the write the watch
delivered before) and the audit fact of the write (``applier_user``) say whose write a tie
is; only a tie neither decides is mirrored as ``ambiguous``, its ``why`` naming what was
missing.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.decide.apply_window import (
    NO_ATTRIBUTION,
    NO_AUDIT,
    NO_ORDER,
    ApplyWindow,
    Newest,
    Verdict,
    applier_user,
    decide,
    writers_of,
)
from shared.model.events import ManagerEntry

SENT = 1_000.0
T0, T1 = "2026-12-01T10:00:04Z", "2026-12-01T10:00:05Z"
FLUX, KUBECTL = "kustomize-controller", "kubectl-edit"
TIE = (ManagerEntry(FLUX, "Apply", T1), ManagerEntry(KUBECTL, "Update", T1))


def _newest(time: str, *managers: str, uid: str = "u1") -> Newest:
    return Newest(uid, time, frozenset(managers))


def _decide(
    writers: frozenset[str] | None = None,
    audit_by_applier: bool | None = None,
    attribution: bool = False,
) -> tuple[Verdict, str]:
    decision = decide(
        operation="UPDATE",
        newest=TIE,
        applier_kind="Kustomization",
        window=ApplyWindow(SENT),
        api_edited_at=SENT + 1.0,
        now=SENT + 3.0,
        writers=writers,
        audit_by_applier=audit_by_applier,
        attribution=attribution,
    )
    return decision.verdict, decision.why


def test_the_edit_then_the_applier_in_one_second_is_the_applier_by_the_watch_order() -> None:
    """The watch delivered the edit (kubectl alone at T1), then the tie: Flux's entry moved."""
    writers = writers_of(_newest(T1, KUBECTL), _newest(T1, KUBECTL, FLUX))
    assert writers == frozenset({FLUX})
    verdict, why = _decide(writers=writers)
    assert verdict is Verdict.WITHHELD
    assert "the watch's order" in why


def test_the_applier_then_the_edit_in_one_second_is_the_edit_by_the_watch_order() -> None:
    writers = writers_of(_newest(T1, FLUX), _newest(T1, KUBECTL, FLUX))
    assert writers == frozenset({KUBECTL})
    verdict, why = _decide(writers=writers)
    assert verdict is Verdict.MIRROR  # the edit: mirrored, and no collision
    assert "the edit, by the watch's order" in why


@pytest.mark.parametrize(
    ("previous", "current"),
    [
        (None, _newest(T1, KUBECTL, FLUX)),  # no write seen before (a new watcher, a relist)
        (_newest(T0, KUBECTL), _newest(T1, KUBECTL, FLUX)),  # a write of T1 was not seen
        (_newest(T1, KUBECTL, FLUX), _newest(T1, KUBECTL, FLUX)),  # someone wrote twice in T1
        (_newest(T1, KUBECTL, uid="u0"), _newest(T1, KUBECTL, FLUX)),  # another object
        (_newest(T1, KUBECTL), _newest(T0, KUBECTL, FLUX)),  # time went back: no order
    ],
)
def test_the_watch_order_says_nothing_when_it_cannot_know(
    previous: Newest | None, current: Newest
) -> None:
    assert writers_of(previous, current) is None


def test_one_manager_at_a_new_second_is_that_managers_write() -> None:
    assert writers_of(_newest(T0, KUBECTL), _newest(T1, FLUX)) == frozenset({FLUX})


def test_the_audit_fact_decides_when_the_order_cannot() -> None:
    verdict, why = _decide(audit_by_applier=True, attribution=True)
    assert verdict is Verdict.WITHHELD and "the audit fact of this write" in why
    verdict, why = _decide(audit_by_applier=False, attribution=True)
    assert verdict is Verdict.MIRROR and "the edit, by the audit fact of this write" in why


def test_the_order_comes_before_the_audit_fact() -> None:
    verdict, _ = _decide(writers=frozenset({KUBECTL}), audit_by_applier=True, attribution=True)
    assert verdict is Verdict.MIRROR


def test_an_undecided_tie_is_ambiguous_and_names_the_missing_facts() -> None:
    verdict, why = _decide()
    assert verdict is Verdict.AMBIGUOUS
    assert NO_ORDER in why and NO_ATTRIBUTION in why
    verdict, why = _decide(attribution=True)
    assert verdict is Verdict.AMBIGUOUS
    assert NO_ORDER in why and NO_AUDIT in why
    # writers naming both managers (one write cannot be both): the order does not decide
    verdict, _ = _decide(writers=frozenset({KUBECTL, FLUX}))
    assert verdict is Verdict.AMBIGUOUS


def test_the_appliers_user_is_its_controllers_service_account() -> None:
    assert applier_user("Kustomization", "system:serviceaccount:flux-system:kustomize-controller")
    assert applier_user("Application", "system:serviceaccount:argocd:argocd-application-controller")
    assert not applier_user("Kustomization", "alice@example.com")
    assert not applier_user("Kustomization", "system:serviceaccount:team:deployer")
    assert not applier_user("Application", "system:serviceaccount:x:kustomize-controller")
    assert not applier_user("Kustomization", "system:serviceaccount:kustomize-controller")


MANAGERS = st.frozensets(st.sampled_from([FLUX, KUBECTL, "helm", "kubectl-client-side-apply"]))


@given(before=MANAGERS, after=MANAGERS, same_second=st.booleans())
def test_the_writers_are_new_entries_of_the_newest_second(
    before: frozenset[str], after: frozenset[str], same_second: bool
) -> None:
    """Whatever the entries, the writers the order names are among the current newest
    entries, and never ones that were already newest at that second before."""
    if not after:
        return
    previous = _newest(T1 if same_second else T0, *before) if before else None
    writers = writers_of(previous, _newest(T1, *after))
    if writers is None:
        return
    assert writers and writers <= after
    if same_second and previous is not None:
        assert not writers & previous.managers
    else:
        assert len(writers) == 1


@given(writers=st.none() | MANAGERS, audit=st.none() | st.booleans(), attribution=st.booleans())
def test_a_tie_is_withheld_only_on_a_fact_naming_the_applier(
    writers: frozenset[str] | None, audit: bool | None, attribution: bool
) -> None:
    """Only proof withholds (W2): a withheld tie had the order name the applier alone, or no
    such order and an audit fact naming the applier's user."""
    verdict, _ = _decide(writers=writers or None, audit_by_applier=audit, attribution=attribution)
    decisive = writers is not None and bool(writers) and (writers <= {FLUX} or FLUX not in writers)
    by_order = decisive and writers is not None and writers <= {FLUX}
    by_audit = not decisive and audit is True
    assert (verdict is Verdict.WITHHELD) == (by_order or by_audit)
    if verdict is Verdict.AMBIGUOUS:
        assert not decisive and audit is None
