"""The indexed join answers exactly as the scan the rules describe (P5; facts:
upstream-gitops-reverser.md §1.4 "Tiers", "Rules").

``scan_join`` and ``scan_submitter`` below are the join as it was written before the index: for
every event, a scan (and sort) of every fact. Hypothesis draws small fact lists whose uids,
resourceVersions, names and stage times collide often (ties and empty strings included, where
"newest" and "first" matter), and each event's answer must be the same fact by identity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.decide.attribution import (
    FactIndex,
    Joined,
    first_per_version,
    join,
    join_submitter,
)
from shared.model.attribution import AuthorFact

SMALL = st.sampled_from(["", "a", "b", "c"])
VERBS = st.sampled_from(["create", "update", "patch", "delete", "deletecollection"])


def _newest(facts: Iterable[AuthorFact]) -> AuthorFact | None:
    found = list(facts)
    return max(found, key=lambda f: f.stage_timestamp) if found else None


def scan_join(
    operation: str,
    *,
    uid: str,
    resource_version: str,
    namespace: str,
    name: str,
    facts: Iterable[AuthorFact],
    grace_over: bool,
) -> Joined | None:
    """The join before the index (a scan per event)."""
    known = list(facts)
    if operation == "DELETE":
        deleted = _newest(f for f in known if f.verb == "delete" and uid and f.uid == uid)
        if deleted is not None:
            return Joined("delete_sticky", deleted)
        listed = _newest(f for f in known if f.verb == "deletecollection" and uid in f.uids)
        if listed is not None:
            return Joined("deletecollection_body_uid", listed)
        return Joined("absent", None) if grace_over else None
    writes = first_per_version(f for f in known if not f.removal)
    exact = _newest(
        f for f in writes if uid and f.uid == uid and f.resource_version == resource_version
    )
    if exact is not None:
        return Joined("exact", exact)
    if not grace_over:
        return None
    latest = _newest(f for f in writes if uid and f.uid == uid)
    if latest is not None:
        return Joined("latest", latest)
    by_name = _newest(
        f for f in writes if f.namespace == namespace and f.name == name and name and not f.uid
    )
    if by_name is not None:
        return Joined("name", by_name)
    return Joined("absent", None)


def scan_submitter(
    *, uid: str, resource_version: str, facts: Iterable[AuthorFact], grace_over: bool
) -> Joined | None:
    """The submitter's join before the index."""
    creates = sorted(
        (f for f in facts if f.verb == "create" and uid and f.uid == uid),
        key=lambda f: f.stage_timestamp,
    )
    if creates:
        exact = next((f for f in creates if f.resource_version == resource_version), None)
        return Joined("exact", exact) if exact is not None else Joined("latest", creates[0])
    return Joined("absent", None) if grace_over else None


@st.composite
def facts(draw: st.DrawFn) -> AuthorFact:
    verb = draw(VERBS)
    return AuthorFact(
        author=draw(st.sampled_from(["alice", "bob"])),
        verb=verb,
        group="",
        resource="configmaps",
        namespace=draw(st.sampled_from(["", "t"])),
        name=draw(SMALL),
        uid=draw(SMALL),
        resource_version=draw(st.sampled_from(["", "1", "2"])),
        audit_id=draw(st.text("xyz", max_size=2)),
        stage_timestamp=draw(st.sampled_from(["", "t1", "t2", "t3"])),
        uids=tuple(draw(st.lists(SMALL, max_size=3))) if verb == "deletecollection" else (),
    )


def _same(a: Joined | None, b: Joined | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.tier == b.tier and a.fact is b.fact


@dataclass(frozen=True, slots=True)
class Event:
    """What the join is asked about one object event."""

    operation: str
    uid: str
    resource_version: str
    namespace: str
    name: str
    grace_over: bool


EVENTS = st.builds(
    Event,
    st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    SMALL,
    st.sampled_from(["", "1", "2", "3"]),
    st.sampled_from(["", "t", "u"]),
    SMALL,
    st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(facts(), max_size=12), EVENTS)
def test_the_indexed_join_is_the_scan(known: list[AuthorFact], e: Event) -> None:
    index = FactIndex.of(known)
    want = scan_join(
        e.operation,
        uid=e.uid,
        resource_version=e.resource_version,
        namespace=e.namespace,
        name=e.name,
        facts=known,
        grace_over=e.grace_over,
    )
    for given_facts in (index, known):
        found = join(
            e.operation,
            uid=e.uid,
            resource_version=e.resource_version,
            namespace=e.namespace,
            name=e.name,
            facts=given_facts,
            grace_over=e.grace_over,
        )
        assert _same(found, want), (found, want)
    want_submitter = scan_submitter(
        uid=e.uid, resource_version=e.resource_version, facts=known, grace_over=e.grace_over
    )
    for given_facts in (index, known):
        found = join_submitter(
            uid=e.uid,
            resource_version=e.resource_version,
            facts=given_facts,
            grace_over=e.grace_over,
        )
        assert _same(found, want_submitter), (found, want_submitter)


def test_of_equal_stage_times_the_first_in_stream_order_is_newest() -> None:
    """The scan's ``max`` keeps the first of equal keys; the index must too (two deletes of
    one uid at one stage time: the first joins)."""

    def delete(author: str) -> AuthorFact:
        return AuthorFact(author, "delete", "", "configmaps", "t", "x", "u", "9", author, "t1")

    first, second = delete("alice"), delete("bob")
    joined = join(
        "DELETE",
        uid="u",
        resource_version="9",
        namespace="t",
        name="x",
        facts=FactIndex.of([first, second]),
        grace_over=False,
    )
    assert joined is not None and joined.fact is first
