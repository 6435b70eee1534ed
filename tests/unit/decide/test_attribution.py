"""The accept gate and the tier join (P5; facts: upstream-gitops-reverser.md §1.4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.decide.attribution import Accepted, Dropped, accept, join, join_submitter, partition
from shared.model.attribution import AuthorFact


def _event(**over: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "stage": "ResponseComplete",
        "verb": "update",
        "requestURI": "/api/v1/namespaces/t/configmaps/x",
        "user": {"username": "alice"},
        "objectRef": {"resource": "configmaps", "apiGroup": "", "uid": "u", "name": "x"},
        "responseStatus": {"code": 200},
    }
    event.update(over)
    return event


@pytest.mark.parametrize(
    ("over", "outcome"),
    [
        ({"stage": "RequestReceived"}, "stage"),
        ({"verb": "get"}, "read_only_or_unknown_verb"),
        ({"responseStatus": {"code": 409}}, "failed_request"),
        ({"responseStatus": {}}, "failed_request"),
        ({"requestURI": "/api/v1/namespaces/t/configmaps?dryRun=All"}, "dry_run"),
        ({"requestURI": "http://[/x?dryRun=All"}, "dry_run"),
        (
            {"objectRef": {"resource": "deployments", "subresource": "status"}},
            "non_scale_subresource",
        ),
        ({"user": {}}, "nil_event"),
    ],
)
def test_the_gate_drops_with_the_facts_outcome(over: dict[str, Any], outcome: str) -> None:
    decision = accept(_event(**over))
    assert isinstance(decision, Dropped) and decision.outcome == outcome


def test_the_gate_keeps_mutations_and_scale() -> None:
    for verb in ("create", "update", "patch", "delete", "deletecollection"):
        assert isinstance(accept(_event(verb=verb)), Accepted)
    scaled = accept(_event(objectRef={"resource": "deployments", "subresource": "scale"}))
    assert isinstance(scaled, Accepted)
    assert isinstance(accept(None), Dropped) and isinstance(accept([1]), Dropped)


def test_deletecollection_facts_carry_the_listed_uids() -> None:
    items = [{"metadata": {"uid": "a"}}, {"metadata": {"uid": "b"}}, {"x": 1}, {"metadata": [1]}, 3]
    decision = accept(_event(verb="deletecollection", responseObject={"items": items}))
    assert isinstance(decision, Accepted) and decision.fact.uids == ("a", "b")
    odd = accept(_event(verb="deletecollection", responseObject={"items": {"a": 1}}))
    assert isinstance(odd, Accepted) and odd.fact.uids == ()


def _fact(
    verb: str, author: str, uid: str = "u", rv: str = "1", at: str = "1", **kw: Any
) -> AuthorFact:
    return AuthorFact(author, verb, "", "configmaps", kw.get("ns", "t"), kw.get("name", "x"),
                      uid, rv, "id", at, uids=kw.get("uids", ()))  # fmt: skip


def test_partition_is_one_group_per_group_resource() -> None:
    a = _fact("update", "a")
    b = AuthorFact("b", "patch", "apps", "deployments", "t", "d", "v", "1", "id", "1")
    assert partition([a, b, a]) == {"configmaps": [a, a], "apps/deployments": [b]}


def test_exact_wins_and_weaker_tiers_wait_for_the_grace() -> None:
    older, newer = _fact("update", "bob", rv="1", at="1"), _fact("update", "alice", rv="2", at="2")
    joined = join(
        "UPDATE",
        uid="u",
        resource_version="2",
        namespace="t",
        name="x",
        facts=[older, newer],
        grace_over=False,
    )
    assert joined is not None and (joined.tier, joined.fact) == ("exact", newer)
    assert (
        join(
            "UPDATE",
            uid="u",
            resource_version="3",
            namespace="t",
            name="x",
            facts=[older, newer],
            grace_over=False,
        )
        is None
    )
    late = join(
        "UPDATE",
        uid="u",
        resource_version="3",
        namespace="t",
        name="x",
        facts=[older, newer],
        grace_over=True,
    )
    assert late is not None and (late.tier, late.fact) == ("latest", newer)
    no_uid = _fact("update", "carol", uid="", rv="", at="3")  # an API whose events name none
    by_name = join(
        "UPDATE",
        uid="other",
        resource_version="3",
        namespace="t",
        name="x",
        facts=[older, no_uid],
        grace_over=True,
    )
    assert by_name is not None and (by_name.tier, by_name.fact) == ("name", no_uid)
    none = join(
        "CREATE",
        uid="z",
        resource_version="1",
        namespace="t",
        name="y",
        facts=[older],
        grace_over=True,
    )
    assert none is not None and (none.tier, none.fact) == ("absent", None)


def test_a_delete_joins_only_removal_evidence_and_a_delete_fact_sticks() -> None:
    writer = _fact("update", "bob", rv="5", at="3")
    deleter = _fact("delete", "alice", rv="4", at="2")
    assert (
        join(
            "DELETE",
            uid="u",
            resource_version="9",
            namespace="t",
            name="x",
            facts=[writer],
            grace_over=False,
        )
        is None
    )
    gone = join(
        "DELETE",
        uid="u",
        resource_version="9",
        namespace="t",
        name="x",
        facts=[writer],
        grace_over=True,
    )
    assert gone is not None and gone.tier == "absent"  # never the last writer
    sticky = join(
        "DELETE",
        uid="u",
        resource_version="9",
        namespace="t",
        name="x",
        facts=[deleter, writer],
        grace_over=False,
    )
    assert sticky is not None and (sticky.tier, sticky.fact) == ("delete_sticky", deleter)
    swept = _fact("deletecollection", "carol", uid="", uids=("u",))
    listed = join(
        "DELETE",
        uid="u",
        resource_version="9",
        namespace="t",
        name="x",
        facts=[swept],
        grace_over=False,
    )
    assert listed is not None and listed.tier == "deletecollection_body_uid"
    # a create or update never falls through to removal facts
    write = join(
        "UPDATE",
        uid="u",
        resource_version="4",
        namespace="t",
        name="x",
        facts=[deleter],
        grace_over=True,
    )
    assert write is not None and write.tier == "absent"


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["stage", "verb", "objectRef", "user", "responseStatus", "requestURI", "responseObject"]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, JSONISH, max_size=7) | JSONISH)
def test_the_gate_answers_any_json_without_raising(event: Any) -> None:
    """Bad input is a dropped event, never an exception (a 500)."""
    assert isinstance(accept(event), Accepted | Dropped)


def test_an_update_that_kept_its_resource_version_is_not_a_fact() -> None:
    """P5, facts §1.4 "changed RV": the request named the version its answer carries."""
    ref = {
        "resource": "configmaps",
        "apiGroup": "",
        "uid": "u",
        "name": "x",
        "resourceVersion": "7",
    }
    same = {"metadata": {"name": "x", "resourceVersion": "7"}}
    for verb in ("update", "patch"):
        decision = accept(_event(verb=verb, objectRef=ref, requestObject=same))
        assert isinstance(decision, Dropped)
        assert decision.outcome == "unchanged_resource_version"
    moved = accept(_event(objectRef=ref, requestObject={"metadata": {"resourceVersion": "6"}}))
    assert isinstance(moved, Accepted)
    no_ref_rv = accept(_event(requestObject=same, responseObject={"metadata": same["metadata"]}))
    assert isinstance(no_ref_rv, Dropped)  # the version read from the response object
    assert isinstance(accept(_event(objectRef=ref, requestObject={"data": {}})), Accepted)


def test_a_no_op_after_a_write_never_takes_its_credit() -> None:
    """P5: bob's no-op names the version alice's write made (the gate could not see it: no
    requestObject); the exact and latest tiers still name alice."""
    alice = AuthorFact("alice", "update", "", "configmaps", "t", "x", "u", "7", "a1",
                       "2026-01-01T00:00:01Z")  # fmt: skip
    bob = AuthorFact("bob", "patch", "", "configmaps", "t", "x", "u", "7", "a2",
                     "2026-01-01T00:00:05Z")  # fmt: skip
    for grace_over in (False, True):
        found = join("UPDATE", uid="u", resource_version="7", namespace="t", name="x",
                     facts=[bob, alice], grace_over=grace_over)  # fmt: skip
        assert found is not None and found.fact is alice and found.tier == "exact"
    latest = join("UPDATE", uid="u", resource_version="8", namespace="t", name="x",
                  facts=[alice, bob], grace_over=True)  # fmt: skip
    assert latest is not None and latest.tier == "latest" and latest.fact is alice


def test_a_commit_request_s_submitter_is_the_user_of_its_create() -> None:
    """P5, P6: only the create of the request's uid names its submitter; the version the
    watcher published picks ``exact``, another still the create (``latest``); a later edit of
    the request by someone else, or another request's create, never does."""
    facts = [
        _fact("create", "bob", uid="other", rv="3", at="1"),
        _fact("create", "alice", uid="cr", rv="5", at="2"),
        _fact("update", "mallory", uid="cr", rv="7", at="3"),
    ]
    exact = join_submitter(uid="cr", resource_version="5", facts=facts, grace_over=False)
    assert exact is not None and exact.tier == "exact" and exact.fact is not None
    assert exact.fact.author == "alice"
    later = join_submitter(uid="cr", resource_version="7", facts=facts, grace_over=False)
    assert later is not None and later.tier == "latest" and later.fact is not None
    assert later.fact.author == "alice"


def test_a_commit_request_without_its_create_waits_then_is_absent() -> None:
    """P5: no create fact of the uid: None (wait) within the grace, ``absent`` after it."""
    facts = [_fact("update", "mallory", uid="cr", rv="7"), _fact("create", "bob", uid="x")]
    assert join_submitter(uid="cr", resource_version="7", facts=facts, grace_over=False) is None
    gone = join_submitter(uid="cr", resource_version="7", facts=facts, grace_over=True)
    assert gone is not None and (gone.tier, gone.fact) == ("absent", None)
    assert join_submitter(uid="", resource_version="", facts=facts, grace_over=True) == gone


#: A DELETE as kube-apiserver audits it when the object goes at once (no finalizers): the
#: answer is a ``Status`` naming the object's uid in ``details``, and ``objectRef`` carries
#: no uid (facts: upstream-0.50.md, #399; the sandbox's double sends the same).
DELETE_EVENT: dict[str, Any] = {
    "stage": "ResponseComplete",
    "verb": "delete",
    "requestURI": "/api/v1/namespaces/t/configmaps/x",
    "user": {"username": "alice"},
    "objectRef": {"resource": "configmaps", "namespace": "t", "name": "x", "apiVersion": "v1"},
    "responseStatus": {"metadata": {}, "code": 200},
    "responseObject": {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "x", "kind": "configmaps", "uid": "u1"},
    },
}


def test_a_delete_answered_with_a_status_is_a_fact_of_the_deleted_uid() -> None:
    """P5, deletes: the delete fact names ``details.uid``; the DELETE of that object joins it."""
    decision = accept(DELETE_EVENT)
    assert isinstance(decision, Accepted)
    assert (decision.fact.verb, decision.fact.uid) == ("delete", "u1")
    joined = join(
        "DELETE",
        uid="u1",
        resource_version="9",
        namespace="t",
        name="x",
        facts=[decision.fact],
        grace_over=False,
    )
    assert joined is not None and (joined.tier, joined.fact) == ("delete_sticky", decision.fact)


def test_an_answer_that_is_the_object_names_its_uid_and_version() -> None:
    """A delete held by finalizers answers the object; its metadata names uid and version."""
    answer = {"kind": "ConfigMap", "metadata": {"uid": "u2", "resourceVersion": "12"}}
    decision = accept(dict(DELETE_EVENT, responseObject=answer))
    assert isinstance(decision, Accepted)
    assert (decision.fact.uid, decision.fact.resource_version) == ("u2", "12")
    named = accept(_event(objectRef={"resource": "configmaps", "uid": "u", "name": "x"}))
    assert isinstance(named, Accepted) and named.fact.uid == "u"  # objectRef's first


def test_no_fact_of_a_deleted_object_is_credited_to_a_namesake() -> None:
    """P5 (the Go operator's bug of 2026-10-06): x (uid u1) written by bob and deleted by
    alice; a new x (uid u2) is made and its own fact never arrives. Once the grace ran out
    its CREATE is absent, never alice's delete nor bob's write of the old object, and its
    DELETE never joins the old one's delete."""
    delete = accept(DELETE_EVENT)
    assert isinstance(delete, Accepted)
    old_write = _fact("update", "bob", uid="u1", rv="3", at="1")
    known = [old_write, delete.fact]
    for operation in ("CREATE", "UPDATE", "DELETE"):
        joined = join(
            operation,
            uid="u2",
            resource_version="20",
            namespace="t",
            name="x",
            facts=known,
            grace_over=True,
        )
        assert joined is not None and (joined.tier, joined.fact) == ("absent", None), operation


def test_facts_received_is_the_route_s_last_verdict() -> None:
    """N5: the ClusterProvider's AuditFactsReceived from the branch owners' last verdict."""
    from shared.decide.attribution import facts_received
    from shared.model.attribution import RouteJoins

    assert facts_received("prod", None)[:2] == ("Unknown", "NoEditsJudged")
    assert facts_received("prod", RouteJoins("joined", "t"))[:2] == ("True", "FactsJoined")
    status, reason, message = facts_received("prod", RouteJoins("absent", "2026-12-06T05:00:00Z"))
    assert (status, reason) == ("False", "NoAuditFacts")
    assert "since 2026-12-06T05:00:00Z" in message and "/audit-webhook/prod" in message
