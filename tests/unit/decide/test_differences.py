"""``ignoreDifferences`` (issue 27.13): the fields a manager owns, read from ``fieldsV1`` as
kube-apiserver writes it (structured-merge-diff's path elements: ``f:`` field, ``k:`` list item
by keys, ``v:`` set item by value, ``i:`` position, ``.`` the node itself; facts/appliers.md,
"Field manager and managedFields"), and Git's values kept for them."""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.differences import escape, keep_git_values, owned_pointers, tokens
from shared.model.events import ObjectEvent
from shared.model.rule_fields import parse_ignore_differences

LIVE: dict[str, Any] = {
    "metadata": {"name": "web", "annotations": {"a/b": "x"}, "finalizers": ["one", "two"]},
    "spec": {
        "replicas": 5,
        "template": {
            "spec": {"containers": [{"name": "side", "image": "s"}, {"name": "web", "image": "w"}]}
        },
    },
}
MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "subresource": "scale",
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
    },
    {
        "manager": "injector",
        "operation": "Update",
        "fieldsV1": {
            "f:metadata": {"f:annotations": {"f:a/b": {}}, "f:finalizers": {'v:"two"': {}}},
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {'k:{"name":"side"}': {".": {}, "f:image": {}}},
                    }
                }
            },
        },
    },
    {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:paused": {}}}},
]


def test_the_fields_a_manager_owns_become_pointers() -> None:
    assert owned_pointers(MANAGED, ["kube-controller-manager"], LIVE) == ("/spec/replicas",)
    assert owned_pointers(MANAGED, ["injector"], LIVE) == (
        "/metadata/annotations/a~1b",
        "/metadata/finalizers/1",
        "/spec/template/spec/containers/0",
        "/spec/template/spec/containers/0/image",
    )
    assert owned_pointers(MANAGED, ["nobody"], LIVE) == ()
    assert owned_pointers(None, ["injector"], LIVE) == ()


def test_a_list_item_gone_from_the_live_object_is_passed_over() -> None:
    live = {"spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}}
    assert owned_pointers(MANAGED, ["injector"], live) == ()


def test_pointer_tokens_round_trip() -> None:
    assert escape("a/b~c") == "a~1b~0c"
    assert tokens("/metadata/annotations/a~1b~0c") == ["metadata", "annotations", "a/b~c"]


def test_gits_value_is_kept_and_gits_absence_too() -> None:
    held = {"metadata": {"name": "web"}, "spec": {"replicas": 2, "template": {"x": 1}}}
    new = {"metadata": {"name": "web", "annotations": {"note": "n"}}, "spec": {"replicas": 5}}
    kept = keep_git_values(new, held, ["/spec/replicas", "/metadata/annotations/note"])
    assert kept == {"metadata": {"name": "web"}, "spec": {"replicas": 2}}
    assert new["spec"]["replicas"] == 5  # the event's body is not changed in place
    made = keep_git_values({"metadata": {"name": "web"}}, held, ["/spec/template/x"])
    assert made == {"metadata": {"name": "web"}, "spec": {"template": {"x": 1}}}


def test_a_list_item_git_lacks_is_left_as_the_api_has_it() -> None:
    held = {"items": ["a"]}
    assert keep_git_values({"items": ["a", "b"]}, held, ["/items/1"]) == {"items": ["a", "b"]}
    assert keep_git_values({"items": ["z", "b"]}, held, ["/items/0"]) == {"items": ["a", "b"]}


def test_the_event_carries_its_pointers_through_redis() -> None:
    event = ObjectEvent.from_fields(
        {
            "target": '["u", "ns", "t"]',
            "op": "UPDATE",
            "id": '["apps", "v1", "deployments", "Deployment", "ns", "web"]',
            "uid": "1",
            "rv": "2",
            "body": "{}",
            "managers": "[]",
            "at": "1.0",
            "ignored": '["/spec/replicas"]',
        }
    )
    assert event.ignored == ("/spec/replicas",)
    assert ObjectEvent.from_fields(event.to_fields()) == event
    assert (
        "ignored" not in ObjectEvent.from_fields({**event.to_fields(), "ignored": ""}).to_fields()
    )


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ([{}], "names no jsonPointers"),
        ([{"jsonPointers": ["spec/replicas"]}], "must start with /"),
        ([{"jsonPointers": ["/metadata/name"]}], "identity"),
        ([{"jsonPointers": ["/metadata"]}], "identity"),
        ([{"jsonPointers": ["/a~2"]}], "neither ~0 nor ~1"),
        ([{"managedFieldsManagers": [""]}], "empty manager"),
        ([{"jsonPointers": [f"/x{i}" for i in range(33)]}], "more than 32"),
    ],
)
def test_what_the_crd_refuses_is_refused_again(raw: list[dict[str, Any]], words: str) -> None:
    ignore, problem = parse_ignore_differences(raw)
    assert not ignore
    assert words in problem


def test_entries_merge() -> None:
    raw = [
        {"jsonPointers": ["/spec/replicas"]},
        {"managedFieldsManagers": ["kube-controller-manager"], "jsonPointers": ["/data/x"]},
    ]
    ignore, problem = parse_ignore_differences(raw)
    assert problem == ""
    assert ignore.json_pointers == ("/data/x", "/spec/replicas")
    assert ignore.managers == ("kube-controller-manager",)
