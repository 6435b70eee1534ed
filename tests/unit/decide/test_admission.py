"""ClusterProvider admission (behaviour.md §1: ``accessFrom`` absent admits nothing,
``selector: {}`` admits every namespace) with label selectors evaluated as apimachinery does
(staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go ``LabelSelectorAsSelector``: an
empty selector is Everything; pkg/labels/selector.go ``Requirement.Matches``: NotIn and
DoesNotExist hold for a missing key)."""

from __future__ import annotations

import pytest

from shared.decide.selectors import admits, requirement_matches, selector_matches
from shared.model.crds import AccessFrom, LabelSelector, Requirement, parse_selector


def test_absent_access_from_admits_nothing() -> None:
    assert not admits(None, "team-a", {})


def test_empty_access_from_admits_nothing_but_empty_selector_admits_all() -> None:
    assert not admits(AccessFrom(), "team-a", {})
    assert admits(AccessFrom(selector=LabelSelector()), "team-a", {})
    assert admits(AccessFrom(selector=parse_selector({})), "anything", {"x": "y"})


def test_names_or_selector_is_enough() -> None:
    access = AccessFrom(names=("team-a",), selector=parse_selector({"matchLabels": {"m": "y"}}))
    assert admits(access, "team-a", {})
    assert admits(access, "team-z", {"m": "y"})
    assert not admits(access, "team-z", {"m": "n"})


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ("a", "b"), {"k": "a"}, True),
        ("In", ("a", "b"), {"k": "c"}, False),
        ("In", ("a",), {}, False),
        ("NotIn", ("a",), {"k": "b"}, True),
        ("NotIn", ("a",), {}, True),
        ("NotIn", ("a",), {"k": "a"}, False),
        ("Exists", (), {"k": ""}, True),
        ("Exists", (), {}, False),
        ("DoesNotExist", (), {}, True),
        ("DoesNotExist", (), {"k": "x"}, False),
        ("Bogus", (), {"k": "x"}, False),
    ],
)
def test_requirements(
    operator: str, values: tuple[str, ...], labels: dict[str, str], expected: bool
) -> None:
    assert requirement_matches(Requirement("k", operator, values), labels) is expected


def test_every_part_of_a_selector_must_hold() -> None:
    selector = parse_selector(
        {
            "matchLabels": {"team": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}],
        }
    )
    assert selector_matches(selector, {"team": "a", "tier": "web"})
    assert not selector_matches(selector, {"team": "a", "tier": "db"})
    assert not selector_matches(selector, {"tier": "web"})
