"""Author name and email (P5; facts: upstream-gitops-reverser.md §3.6)."""

from __future__ import annotations

from shared.model.attribution import (
    UNRESOLVED,
    Author,
    AuthorFact,
    author_of,
    construct_safe_email,
    facts_from_json,
    facts_json,
)


def _fact(author: str, display: str = "", email: str = "") -> AuthorFact:
    return AuthorFact(
        author, "update", "", "configmaps", "t", "x", "u", "1", "a", "t", display, email
    )


def test_the_facts_example_of_a_constructed_email() -> None:
    assert (
        construct_safe_email("system:serviceaccount:flux-system:kustomize-controller")
        == "systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local"
    )


def test_safe_claims_are_used_and_unsafe_ones_fall_back() -> None:
    good = author_of(_fact("alice", "Alice Liddell", "alice@example.org"))
    assert (good.name, good.email, good.outcome, good.username) == (
        "Alice Liddell", "alice@example.org", "resolved", "alice"
    )  # fmt: skip
    bad = author_of(_fact("Alice", "Eve <eve@x>", "not an email\n"))
    assert (bad.name, bad.email) == ("Alice", "alice@noreply.cluster.local")
    control = author_of(_fact("bob", "B\x07ob"))
    assert control.name == "bob"


def test_the_sentinel() -> None:
    assert (UNRESOLVED.name, UNRESOLVED.email, UNRESOLVED.outcome) == (
        "unknown (attribution unresolved)",
        "attribution-unresolved@gitops-reverser.invalid",
        "unresolved",
    )
    assert Author.from_data(UNRESOLVED.to_data()) == UNRESOLVED
    assert Author.from_data({"outcome": ""}) is None


def test_facts_round_trip() -> None:
    facts = [
        _fact("a"),
        AuthorFact(
            "b", "deletecollection", "", "configmaps", "t", "", "", "", "i", "t", uids=("x",)
        ),
    ]
    assert facts_from_json(facts_json(facts)) == facts
