"""The patch engines of the API double: RFC 7386, RFC 6902 and strategic merge, with the real
server's refusals. Each test's docstring names the source it follows (verified with search).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox.kube.patcherrors import UNPROCESSABLE_MESSAGE, json_equal
from sandbox.kube.patching import PatchError, json_patch, merge_patch, strategic_merge_patch

# ---- RFC 7386 JSON merge patch ------------------------------------------------------------

#: RFC 7386 Appendix A cases, each nested one level under "x" so that the non-object patches
#: keep their RFC meaning (a top-level non-object patch is refused by the API server).
RFC7386_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_CASES)
def test_merge_patch_follows_rfc7386_appendix(target: Any, patch: Any, expected: Any) -> None:
    """RFC 7386 Appendix A (https://www.rfc-editor.org/rfc/rfc7386#appendix-A)."""
    before = copy.deepcopy({"x": target})
    assert merge_patch({"x": target}, {"x": patch}) == {"x": expected}
    assert {"x": target} == before


def test_merge_patch_null_member_deletes_and_a_missing_one_is_ignored() -> None:
    """RFC 7386 §2: a null value removes the member; removing a missing member is no error."""
    assert merge_patch({"x": 1, "y": 2}, {"x": None, "z": None}) == {"y": 2}


@pytest.mark.parametrize("patch", [None, "bar", 3, True])
def test_merge_patch_that_is_not_an_object_is_bad_request(patch: Any) -> None:
    """apiserver handlers/patch.go applyJSPatch: evanphx MergePatch ErrBadJSONPatch -> 400
    BadRequest "Invalid JSON Patch" (a scalar or null patch cannot be a document)."""
    with pytest.raises(PatchError) as caught:
        merge_patch({"a": 1}, patch)
    assert (caught.value.status, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == "Invalid JSON Patch"


def test_merge_patch_that_is_an_array_is_invalid() -> None:
    """apiserver handlers/patch.go: an array patch yields an array, whose decode into the
    object fails, answered with errors.NewInvalid (422)."""
    with pytest.raises(PatchError) as caught:
        merge_patch({"a": 1}, ["c"])
    assert (caught.value.status, caught.value.reason) == (422, "Invalid")


def _same(left: Any, right: Any) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def create_merge_patch(source: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 patch that turns ``source`` into ``target`` (written for this test)."""
    patch: dict[str, Any] = {key: None for key in source if key not in target}
    for key, value in target.items():
        old = source.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            inner = create_merge_patch(old, value)
            if inner:
                patch[key] = inner
        elif key not in source or not _same(old, value):
            patch[key] = value
    return patch


_SCALARS = (
    st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_KEYS = st.text(min_size=1, max_size=4)
_NO_NULLS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)
_WITH_NULLS = st.recursive(
    _SCALARS | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_KEYS, _WITH_NULLS, max_size=4), st.dictionaries(_KEYS, _NO_NULLS, max_size=4)
)
def test_merge_patch_of_the_diff_reaches_the_target(
    source: dict[str, Any], target: dict[str, Any]
) -> None:
    """RFC 7386 §1: a merge patch can express any change to a document without nulls."""
    assert json_equal(merge_patch(source, create_merge_patch(source, target)), target)


# ---- RFC 6902 JSON patch ------------------------------------------------------------------

RFC6902_CASES = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    (
        {"a": {"b": [1]}},
        [{"op": "copy", "from": "/a/b", "path": "/c"}],
        {"a": {"b": [1]}, "c": [1]},
    ),
]


@pytest.mark.parametrize(("target", "ops", "expected"), RFC6902_CASES)
def test_json_patch_follows_rfc6902_appendix(target: Any, ops: Any, expected: Any) -> None:
    """RFC 6902 Appendix A.1-A.8, A.10, A.11, A.14, A.16 and §4.5 copy
    (https://www.rfc-editor.org/rfc/rfc6902#appendix-A)."""
    before = copy.deepcopy(target)
    assert json_patch(target, ops) == expected
    assert target == before


RFC6902_ERRORS = [
    (
        {"baz": "qux"},
        [{"op": "test", "path": "/baz", "value": "bar"}],
        "testing value /baz failed: test failed",
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz/bat", "value": "qux"}],
        'add operation does not apply: doc is missing path: "/baz/bat": missing value',
    ),
    (
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": "10"}],
        "testing value /~01 failed: test failed",
    ),
]


@pytest.mark.parametrize(("target", "ops", "detail"), RFC6902_ERRORS)
def test_failed_json_patch_operation_is_422_invalid(target: Any, ops: Any, detail: str) -> None:
    """RFC 6902 A.9, A.12, A.15 fail; apiserver handlers/patch.go applyJSPatch answers a
    failed Apply with NewGenericServerResponse(http.StatusUnprocessableEntity, ...), which
    apimachinery api/errors words "the server rejected our request due to an error in our
    request" with reason Invalid (the library's "testing value ... failed" text is dropped)."""
    with pytest.raises(PatchError) as caught:
        json_patch(target, ops)
    assert (caught.value.status, caught.value.reason) == (422, "Invalid")
    assert caught.value.message == UNPROCESSABLE_MESSAGE
    assert caught.value.detail == detail


def test_json_patch_is_all_or_nothing() -> None:
    """RFC 6902 §5: if any operation fails the whole patch is not applied."""
    target = {"metadata": {"resourceVersion": "7"}, "data": {"a": "1"}}
    ops = [
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "6"},
    ]
    with pytest.raises(PatchError):
        json_patch(target, ops)
    assert target["data"] == {"a": "1"}


@pytest.mark.parametrize("ops", [{"op": "add"}, "x", [["add"]]])
def test_json_patch_that_does_not_decode_is_bad_request(ops: Any) -> None:
    """apiserver handlers/patch.go: jsonpatch.DecodePatch failing -> errors.NewBadRequest."""
    with pytest.raises(PatchError) as caught:
        json_patch({}, ops)
    assert (caught.value.status, caught.value.reason) == (400, "BadRequest")
    assert "cannot unmarshal" in caught.value.message


def test_json_patch_with_too_many_operations_is_413() -> None:
    """apiserver handlers/patch.go maxJSONPatchOperations = 10000 ->
    NewRequestEntityTooLargeError."""
    with pytest.raises(PatchError) as caught:
        json_patch({}, [{"op": "test", "path": "/a", "value": None}] * 10001)
    assert (caught.value.status, caught.value.reason) == (413, "RequestEntityTooLarge")


def test_json_patch_unknown_op_and_removing_a_missing_member_fail() -> None:
    """evanphx json-patch v4 patch.go ApplyIndent: "Unexpected kind" and partialDoc.remove
    "Unable to remove nonexistent key" both end the patch (422 at the server)."""
    for ops in ([{"op": "frobnicate", "path": "/a"}], [{"op": "remove", "path": "/nope"}]):
        with pytest.raises(PatchError) as caught:
            json_patch({"a": 1}, ops)
        assert caught.value.status == 422


def test_json_patch_negative_index_counts_from_the_end() -> None:
    """evanphx json-patch v4 patch.go: SupportNegativeIndices defaults to true."""
    assert json_patch({"a": [1, 2, 3]}, [{"op": "remove", "path": "/a/-1"}]) == {"a": [1, 2]}


# ---- strategic merge patch ----------------------------------------------------------------


def _deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "finalizers": ["a", "b"]},
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers, **spec},
            },
        },
    }


def _containers(patch_containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": patch_containers, **spec}}}}


APP = {
    "name": "app",
    "image": "app:1",
    "env": [{"name": "A", "value": "1"}],
    "ports": [{"containerPort": 80}],
    "volumeMounts": [{"mountPath": "/a", "name": "v"}],
}
SIDECAR = {"name": "sidecar", "image": "proxy:1"}


def test_strategic_merge_merges_deployment_containers_by_name() -> None:
    """k8s.io/api core/v1 types.go PodSpec.Containers `patchStrategy:"merge"
    patchMergeKey:"name"`: a patched container merges into its namesake, others stay."""
    target = _deployment([copy.deepcopy(APP), copy.deepcopy(SIDECAR)])
    result = strategic_merge_patch(
        target, _containers([{"name": "app", "image": "app:2"}]), "Deployment"
    )
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "sidecar"]
    assert containers[0] == {**APP, "image": "app:2"}
    assert target["spec"]["template"]["spec"]["containers"][0]["image"] == "app:1"


def test_strategic_merge_patch_delete_directive_removes_the_container() -> None:
    """strategicpatch patch.go mergeSliceWithSpecialElements: {"$patch": "delete", <key>}
    deletes the items with that merge key."""
    target = _deployment([copy.deepcopy(APP), copy.deepcopy(SIDECAR)])
    patch = _containers([{"name": "sidecar", "$patch": "delete"}])
    result = strategic_merge_patch(target, patch, "Deployment")
    assert result["spec"]["template"]["spec"]["containers"] == [APP]


def test_strategic_merge_merges_env_ports_and_mounts_by_their_keys() -> None:
    """k8s.io/api core/v1 types.go Container: Env by name, Ports by containerPort,
    VolumeMounts by mountPath (patchStrategy merge). Order: strategicpatch patch.go
    mergeSortedSlice takes the patch item whenever it cannot compare both live positions, so
    an item new to the list lands before the live ones (no $setElementOrder sent)."""
    target = _deployment([copy.deepcopy(APP)])
    patch = _containers(
        [
            {
                "name": "app",
                "env": [{"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"mountPath": "/b", "name": "w"}],
            }
        ]
    )
    app = strategic_merge_patch(target, patch, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert app["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
    assert app["ports"] == [{"containerPort": 80, "name": "http"}]
    assert [m["mountPath"] for m in app["volumeMounts"]] == ["/b", "/a"]


def test_strategic_merge_retain_keys_clears_the_old_volume_source() -> None:
    """core/v1 PodSpec.Volumes `patchStrategy:"merge,retainKeys" patchMergeKey:"name"`;
    strategicpatch applyRetainKeysDirective drops keys missing from $retainKeys."""
    target = _deployment([copy.deepcopy(APP)], volumes=[{"name": "v", "configMap": {"name": "cm"}}])
    patch = _containers(
        [],
        volumes=[{"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}],
    )
    spec = strategic_merge_patch(target, patch, "Deployment")["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "v", "secret": {"secretName": "s"}}]
    assert [c["name"] for c in spec["containers"]] == ["app"]


def test_strategic_merge_retain_keys_that_is_not_a_list_is_bad_request() -> None:
    """apiserver handlers/patch.go interpretStrategicMergePatchError:
    ErrBadPatchFormatForRetainKeys -> 400 "invalid patch format of retainKeys"."""
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch({"spec": {}}, {"spec": {"$retainKeys": "x"}}, "Deployment")
    assert (caught.value.status, caught.value.message) == (
        400,
        "invalid patch format of retainKeys",
    )


def test_strategic_merge_finalizers_merge_as_a_set_and_delete_from_primitive_list() -> None:
    """apimachinery meta/v1 types.go ObjectMeta.Finalizers `patchStrategy:"merge"` (no key):
    union without duplicates; $deleteFromPrimitiveList/finalizers removes items."""
    target = _deployment([])
    added = strategic_merge_patch(target, {"metadata": {"finalizers": ["b", "c"]}}, "Deployment")
    assert added["metadata"]["finalizers"] == ["a", "b", "c"]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    removed = strategic_merge_patch(target, patch, "Deployment")
    assert removed["metadata"]["finalizers"] == ["b"]


def test_strategic_merge_owner_references_merge_by_uid() -> None:
    """apimachinery meta/v1 types.go ObjectMeta.OwnerReferences patchMergeKey uid."""
    target = {"metadata": {"ownerReferences": [{"uid": "1", "kind": "A", "name": "a"}]}}
    patch = {
        "metadata": {
            "ownerReferences": [
                {"uid": "2", "kind": "B", "name": "b"},
                {"uid": "1", "name": "renamed"},
            ]
        }
    }
    refs = strategic_merge_patch(target, patch, "ConfigMap")["metadata"]["ownerReferences"]
    assert {r["uid"]: r["name"] for r in refs} == {"1": "renamed", "2": "b"}


@pytest.mark.parametrize(
    ("kind", "field", "old", "new"),
    [
        ("Role", "rules", [{"verbs": ["get"], "resources": ["pods"]}], [{"verbs": ["list"]}]),
        (
            "RoleBinding",
            "subjects",
            [{"kind": "User", "name": "a"}],
            [{"kind": "User", "name": "b"}],
        ),
    ],
)
def test_strategic_merge_replaces_rbac_lists(kind: str, field: str, old: Any, new: Any) -> None:
    """k8s.io/api rbac/v1 types.go: Role.Rules and RoleBinding.Subjects carry no
    patchStrategy (+listType=atomic), so a patch replaces the whole list."""
    assert strategic_merge_patch({field: old}, {field: new}, kind) == {field: new}


def _ordered_names(order: list[str], containers: list[dict[str, Any]]) -> list[str]:
    target = _deployment([{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch: dict[str, Any] = {
        "spec": {
            "template": {"spec": {"$setElementOrder/containers": [{"name": n} for n in order]}}
        }
    }
    if containers:
        patch["spec"]["template"]["spec"]["containers"] = containers
    result = strategic_merge_patch(target, patch, "Deployment")
    return [c["name"] for c in result["spec"]["template"]["spec"]["containers"]]


def test_strategic_merge_set_element_order_reorders_the_list() -> None:
    """strategicpatch patch.go mergePatchIntoOriginal: $setElementOrder/<field> is used even
    when the list itself is not in the patch (kubectl sends it for a pure reorder)."""
    assert _ordered_names(["c", "a", "b"], []) == ["c", "a", "b"]


def test_strategic_merge_set_element_order_interleaves_server_only_items() -> None:
    """strategicpatch normalizeElementOrder + mergeSortedSlice: named items follow the
    directive ([c, a, d]); the server-only b is inserted before the first named item that
    comes after it in the live list (c), giving [b, c, a, d]."""
    assert _ordered_names(["c", "a", "d"], [{"name": "d"}]) == ["b", "c", "a", "d"]


def test_strategic_merge_map_directives_and_nulls() -> None:
    """strategicpatch handleDirectiveInMergeMap: $patch replace swaps the map, delete empties
    it; a null deletes a key; directives never reach the stored object."""
    target = {
        "metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}},
        "data": {"k": "v", "gone": "x"},
    }
    patch = {
        "metadata": {
            "labels": {"$patch": "replace", "c": "3"},
            "annotations": {"$patch": "delete"},
        },
        "data": {"gone": None, "new": {"$patch": "replace", "n": None, "m": 1}},
    }
    assert strategic_merge_patch(target, patch, "ConfigMap") == {
        "metadata": {"labels": {"c": "3"}, "annotations": {}},
        "data": {"k": "v", "new": {"m": 1}},
    }


def test_strategic_merge_missing_merge_key_is_a_500_with_upstream_wording() -> None:
    """apimachinery mergepatch errors.go ErrNoMergeKey "map: %v does not contain declared
    merge key: %s" is a plain error, so ErrorToAPIStatus answers 500 with an empty reason
    (kubectl prints "Error from server: map: map[...] does not contain declared merge key",
    kubernetes/kubernetes#141112)."""
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch(_deployment([APP]), _containers([{"image": "x"}]), "Deployment")
    assert (caught.value.status, caught.value.reason) == (500, "")
    assert caught.value.message == "map: map[image:x] does not contain declared merge key: name"


def test_strategic_merge_list_of_lists_is_unprocessable() -> None:
    """apiserver handlers/patch.go interpretStrategicMergePatchError: ErrNoListOfLists -> 422."""
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch(
            {"metadata": {"finalizers": []}}, {"metadata": {"finalizers": [["a"]]}}, "ConfigMap"
        )
    assert caught.value.status == 422


def test_strategic_merge_of_a_non_object_patch_is_bad_request() -> None:
    """apiserver handlers/patch.go strategicPatchObject: a patch that does not unmarshal into
    map[string]interface{} is errors.NewBadRequest."""
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch({}, ["a"], "ConfigMap")
    assert caught.value.status == 400
