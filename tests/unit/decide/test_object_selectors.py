"""``rules[].objectSelector`` (issue 27.3): parsed with the Go operator's limits, matched as
apimachinery's labels.Selector matches (every matchLabels pair and every expression), merged
across the rules of one watch, and a rule that cannot be used fails its own WatchRule only."""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.selectors import selection_key, selectors_from_key, selects
from shared.decide.watches import WatchKey, desired_watches, rule_problems
from shared.model.crd_meta import LabelSelector, Requirement
from shared.model.crds import parse_watch_rule
from shared.model.ids import GitTargetUid
from shared.model.rule_fields import parse_object_selector
from shared.store.watches import WatchFeed
from tests.unit.decide.test_watch_plan import CATALOG, _target

WEB = LabelSelector((("tier", "web"),))


def _sel(raw: dict[str, Any]) -> LabelSelector:
    selector, problem = parse_object_selector(raw)
    assert problem == ""
    assert selector is not None
    return selector


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a", "b"], {"k": "c"}, False),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {"k": "b"}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("NotIn", ["a"], {}, True),  # apimachinery: NotIn holds for an absent key
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
    ],
)
def test_each_operator(
    operator: str, values: list[str], labels: dict[str, str], expected: bool
) -> None:
    entry: dict[str, Any] = {"key": "k", "operator": operator}
    if values:
        entry["values"] = values
    selector = _sel({"matchExpressions": [entry]})
    assert selects((selector,), labels) is expected


def test_match_labels_and_expressions_must_all_hold() -> None:
    selector = _sel(
        {
            "matchLabels": {"tier": "web"},
            "matchExpressions": [{"key": "team", "operator": "Exists"}],
        }
    )
    assert selects((selector,), {"tier": "web", "team": "x"})
    assert not selects((selector,), {"tier": "web"})
    assert not selects((selector,), {"team": "x"})


def test_none_selects_everything_and_any_of_several_is_enough() -> None:
    assert selects(None, {})
    db = LabelSelector((("tier", "db"),))
    assert selects((WEB, db), {"tier": "db"})
    assert not selects((WEB, db), {"tier": "cache"})
    assert not selects((), {"tier": "web"})


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"matchLabels": {f"k{i}": "v" for i in range(65)}}, "more than 64"),
        ({"matchExpressions": [{"key": f"k{i}", "operator": "Exists"} for i in range(33)]}, "32"),
        ({"matchExpressions": [{"key": "k", "operator": "In"}]}, "needs at least one value"),
        ({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]}, "no values"),
        ({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]}, "not one of"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "key is empty"),
    ],
)
def test_what_the_crd_refuses_is_refused_again(raw: dict[str, Any], words: str) -> None:
    selector, problem = parse_object_selector(raw)
    assert selector is None
    assert words in problem


def test_absent_selector_is_none_and_empty_selector_matches_all() -> None:
    assert parse_object_selector(None) == (None, "")
    empty = _sel({})
    assert selects((empty,), {"any": "thing"})


def test_selection_key_tells_selectors_apart_and_ignores_order() -> None:
    db = LabelSelector((), (Requirement("tier", "In", ("db",)),))
    assert selection_key(None) == ""
    assert selection_key((WEB, db)) == selection_key((db, WEB))
    assert selection_key((WEB,)) != selection_key((db,))
    assert selection_key(()) != ""  # selects nothing is not selects everything


def _raw_rule(ns: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": "wr", "uid": "wr", "generation": 1},
        "spec": {"targetRef": {"name": "t"}, "rules": list(entries)},
    }


CM: dict[str, Any] = {"apiGroups": [""], "resources": ["configmaps"]}


def test_rules_of_one_watch_merge_their_selectors() -> None:
    """Two rules on one type: the watch mirrors what either selects; a rule without a
    selector makes it mirror every object."""
    targets = [_target("a", "t", "uid-a")]
    key = WatchKey(GitTargetUid("uid-a"), "", "configmaps", "a")
    web = {**CM, "objectSelector": {"matchLabels": {"tier": "web"}}}
    db = {**CM, "objectSelector": {"matchLabels": {"tier": "db"}}}
    both = desired_watches(
        targets, [parse_watch_rule(_raw_rule("a", web, db))], {"default": CATALOG}
    )
    selectors = both[key].selectors
    assert selectors is not None and len(selectors) == 2
    assert selects(selectors, {"tier": "db"}) and not selects(selectors, {"tier": "x"})
    every = desired_watches(
        targets, [parse_watch_rule(_raw_rule("a", web, CM))], {"default": CATALOG}
    )
    assert every[key].selectors is None


def test_an_unusable_rule_fails_its_watch_rule_only() -> None:
    targets = [_target("a", "t", "uid-a"), _target("b", "t", "uid-b")]
    bad = {**CM, "objectSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}}
    rules = [parse_watch_rule(_raw_rule("a", CM, bad)), parse_watch_rule(_raw_rule("b", CM))]
    wanted = desired_watches(targets, rules, {"default": CATALOG})
    assert {k.namespace for k in wanted} == {"b"}
    (problem,) = rule_problems(rules[0], targets[0].target, None, CATALOG)
    assert problem.reason == "InvalidRule"
    assert problem.message.startswith("rules[1].objectSelector.matchExpressions[0]")
    assert rule_problems(rules[1], targets[1].target, None, CATALOG) == []


def test_the_selection_key_is_read_back_for_the_catch_up_check() -> None:
    db = LabelSelector((), (Requirement("tier", "In", ("db", "cache")),))
    read = selectors_from_key(selection_key((WEB, db)))
    assert read is not None and set(read) == {WEB, db} and len(read) == 2
    assert selectors_from_key("") is None
    feed = WatchFeed(GitTargetUid("u"), "", "v1", "configmaps", "ConfigMap", "a", "c", "x")
    assert WatchFeed.from_data(feed.uid, feed.to_data()) == feed
    plain = WatchFeed(GitTargetUid("u"), "", "v1", "configmaps", "ConfigMap", "a", "c")
    assert len(plain.to_data()) == 6  # as before selectors: older dispatchers read it
    assert WatchFeed.from_data(plain.uid, plain.to_data()) == plain
