"""managedFields of the API double: Update records, server-side apply, conflicts, and the
manager name taken from the User-Agent. Each test's docstring names the source it follows.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from sandbox.kube import fieldsets
from sandbox.kube.managed import (
    ApplyConflict,
    manager_from_user_agent,
    record_update,
    server_side_apply,
)
from sandbox.kube.patching import PatchError

T0 = datetime(2026, 11, 29, 18, 0, 0, 730_000, tzinfo=UTC)


def _configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "5",
            "creationTimestamp": "2026-11-29T17:00:00Z",
            "labels": {"app": "web"},
        },
        "data": dict(data),
    }


def _created(obj: dict[str, Any], manager: str = "kubectl-create") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["managedFields"] = record_update(
        None, obj, manager=manager, api_version="v1", now=T0
    )
    return obj


def _by_manager(obj_or_fields: Any) -> dict[str, dict[str, Any]]:
    fields = obj_or_fields
    if isinstance(obj_or_fields, dict):
        fields = obj_or_fields["metadata"]["managedFields"]
    return {f"{e['manager']}/{e['operation']}": e for e in fields}


# ---- the manager name ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("kubectl/v1.32.0 (linux/amd64) kubernetes/abcdef", "kubectl"),
        ("argocd-application-controller/v2.13 (linux)", "argocd-application-controller"),
        ("odd\x00\tname/1", "oddname"),
        ("", ""),
    ],
)
def test_manager_is_the_user_agent_prefix(agent: str, manager: str) -> None:
    """apiserver handlers/create.go prefixFromUserAgent: the text before the first "/", with
    unprintable characters left out (managerOrUserAgent when fieldManager is empty)."""
    assert manager_from_user_agent(agent) == manager


def test_manager_from_user_agent_is_cut_at_128_bytes() -> None:
    """prefixFromUserAgent stops before validation.FieldManagerMaxLength (128) bytes."""
    assert manager_from_user_agent("é" * 100 + "/1") == "é" * 64


# ---- Update -------------------------------------------------------------------------------


def test_create_records_every_field_it_set_with_time_in_whole_seconds() -> None:
    """managedfields internal/stripmeta.go leaves out apiVersion, kind, metadata, name,
    namespace, uid, resourceVersion, creationTimestamp...; structured-merge-diff compares a
    create against the empty object, so new maps are members ("." entries); metav1.Time
    marshals RFC 3339 seconds in UTC."""
    created = _created(_configmap(k="v"))
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-29T18:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:k": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            },
        }
    ]


def test_time_is_converted_to_utc_and_a_naive_time_is_taken_as_utc() -> None:
    """metav1.Time marshals in UTC ("2006-01-02T15:04:05Z07:00" of Time.UTC())."""
    plus_two = datetime(2026, 11, 29, 20, 0, 59, 999_999, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2026, 11, 29, 18, 0, 59, 999_999)
    for now in (plus_two, naive):
        fields = record_update(None, _configmap(k="v"), manager="m", api_version="v1", now=now)
        assert fields[0]["time"] == "2026-11-29T18:00:59Z"


def test_update_by_a_second_manager_moves_ownership() -> None:
    """structured-merge-diff merge/update.go Updater.update: fields another write added or
    modified leave the old owner's set; managedfieldsupdater.go stamps only the writer."""
    created = _created(_configmap(k="v", keep="x"))
    edited = copy.deepcopy(created)
    edited["data"]["k"] = "changed"
    fields = record_update(
        created, edited, manager="kubectl-edit", api_version="v1", now=T0 + timedelta(seconds=90)
    )
    entries = _by_manager(fields)
    assert entries["kubectl-edit/Update"]["fieldsV1"] == {"f:data": {"f:k": {}}}
    assert entries["kubectl-edit/Update"]["time"] == "2026-11-29T18:01:30Z"
    assert entries["kubectl-create/Update"]["fieldsV1"] == {
        "f:data": {".": {}, "f:keep": {}},
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    }
    assert entries["kubectl-create/Update"]["time"] == "2026-11-29T18:00:00Z"
    assert [e["manager"] for e in fields] == ["kubectl-create", "kubectl-edit"]


def test_untouched_entries_are_kept_as_they_were_and_emptied_ones_are_dropped() -> None:
    """update.go: an entry whose set becomes empty is deleted; encodeManagedFields keeps the
    others (here an entry with an extra key proves it is not re-encoded)."""
    obj = _configmap(k="v")
    other = {
        "manager": "helm",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}},
        "x-extra": 1,
    }
    mine = {
        "manager": "writer",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:01Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}},
    }
    obj["metadata"]["managedFields"] = [other, mine]
    new = copy.deepcopy(obj)
    new["data"] = {"k": "w"}
    fields = record_update(obj, new, manager="other-writer", api_version="v1", now=T0)
    assert fields[0] == other
    assert [e["manager"] for e in fields] == ["helm", "other-writer"]


def test_a_write_that_only_removes_fields_leaves_the_writer_entry_alone() -> None:
    """managedfieldsupdater.go: the entry and its time change only when the operation took
    fields; update.go still removes the deleted fields from every entry."""
    created = _created(_configmap(k="v", gone="x"))
    trimmed = copy.deepcopy(created)
    del trimmed["data"]["gone"]
    fields = record_update(created, trimmed, manager="cleaner", api_version="v1", now=T0)
    assert list(_by_manager(fields)) == ["kubectl-create/Update"]
    assert fields[0]["fieldsV1"]["f:data"] == {".": {}, "f:k": {}}


def test_status_writes_get_their_own_entry_with_subresource() -> None:
    """ManagedFieldsEntry.Subresource is part of the manager identifier
    (internal/managedfields.go BuildManagerIdentifier), so a /status write is its own entry."""
    cr: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 1},
    }
    cr["metadata"]["managedFields"] = record_update(
        None, cr, manager="ctl", api_version="example.com/v1", now=T0
    )
    new = copy.deepcopy(cr)
    new["status"] = {"ready": True}
    fields = record_update(
        cr, new, manager="ctl", api_version="example.com/v1", now=T0, subresource="status"
    )
    assert [e.get("subresource") for e in fields] == [None, "status"]
    assert fields[0]["fieldsV1"] == {"f:spec": {".": {}, "f:size": {}}}
    assert fields[1]["fieldsV1"] == {"f:status": {".": {}, "f:ready": {}}}


def test_managed_fields_sent_with_an_update_replace_the_stored_ones() -> None:
    """internal/fieldmanager.go decodeLiveOrNew: the request's managedFields win when they
    decode and are not empty; a single empty entry [{}] resets them."""
    created = _created(_configmap(k="v"))
    sent = copy.deepcopy(created)
    sent["metadata"]["managedFields"] = [{}]
    assert record_update(created, sent, manager="x", api_version="v1", now=T0) == []
    sent["metadata"]["managedFields"] = [
        {
            "manager": "custom",
            "operation": "Update",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}},
        }
    ]
    assert list(
        _by_manager(record_update(created, sent, manager="x", api_version="v1", now=T0))
    ) == ["custom/Update"]


def test_custom_resource_create_records_the_new_spec_map() -> None:
    """A CR starts from an empty unstructured object, so ``spec`` itself is added and gets
    its "." entry (structured-merge-diff typed/compare.go marks new non-leaf nodes)."""
    cr = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"items": [{"a": 1}], "nested": {"x": 1}},
    }
    fields = record_update(None, cr, manager="m", api_version="example.com/v1", now=T0)
    assert fields[0]["fieldsV1"] == {
        "f:spec": {".": {}, "f:items": {}, "f:nested": {".": {}, "f:x": {}}}
    }


# ---- server-side apply --------------------------------------------------------------------


def _deployment(replicas: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": labels or {}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": "app:1"}]}},
        },
    }


def _live(manager: str = "kubectl-create") -> dict[str, Any]:
    live = _deployment(3)
    del live["metadata"]["labels"]
    live["metadata"]["managedFields"] = record_update(
        None, live, manager=manager, api_version="apps/v1", now=T0
    )
    return live


def test_apply_create_records_an_apply_entry_for_the_applied_fields() -> None:
    """structured-merge-diff typed ToFieldSet: struct fields are not members, map keys and
    list items are; the entry is operation Apply (BuildManagerIdentifier)."""
    obj = server_side_apply(
        None,
        _deployment(2, {"team": "a"}),
        manager="flux",
        force=False,
        api_version="apps/v1",
        now=T0,
    )
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "flux",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T18:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:team": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        }
                    },
                },
            },
        }
    ]
    assert obj["spec"]["replicas"] == 2


def test_apply_conflict_without_force_names_the_owner_as_the_server_does() -> None:
    """managedfields internal/conflict.go: 'Apply failed with 1 conflict: conflict with
    "<manager>" using <apiVersion>: <path>' and causes of type FieldManagerConflict; the real
    409 body in khuedoan/homelab#161 has exactly this shape."""
    with pytest.raises(ApplyConflict) as caught:
        server_side_apply(
            _live("kubectl-edit"),
            _deployment(5),
            manager="flux",
            force=False,
            api_version="apps/v1",
            now=T0,
        )
    error = caught.value
    assert error.conflicts == [("kubectl-edit", ".spec.replicas")]
    assert error.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas'
    )
    assert error.status_body()["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-edit" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    assert (error.status_body()["code"], error.status_body()["reason"]) == (409, "Conflict")


def test_several_conflicts_are_grouped_by_manager() -> None:
    """internal/conflict.go getConflictMessage: "Apply failed with N conflicts: conflicts
    with <manager>:\\n- <path>..." (as in prometheus-operator/kube-prometheus#2145)."""
    live = _live("kubectl-edit")
    applied = _deployment(5)
    applied["spec"]["template"]["spec"]["containers"][0]["image"] = "app:2"
    with pytest.raises(ApplyConflict) as caught:
        server_side_apply(live, applied, manager="flux", force=False, api_version="apps/v1", now=T0)
    assert caught.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="app"].image'
    )


def test_force_takes_ownership() -> None:
    """structured-merge-diff update.go: with force the conflicting fields leave the other
    manager's set and belong to the applier."""
    obj = server_side_apply(
        _live("kubectl-edit"),
        _deployment(5),
        manager="flux",
        force=True,
        api_version="apps/v1",
        now=T0,
    )
    assert obj["spec"]["replicas"] == 5
    entries = _by_manager(obj)
    assert "f:replicas" in entries["flux/Apply"]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entries["kubectl-edit/Update"]["fieldsV1"]["f:spec"]
    assert [e["operation"] for e in obj["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_applying_the_same_value_makes_a_co_owner_without_conflict() -> None:
    """Server-Side Apply docs, Conflicts: "You may co-own fields by updating your manifest to
    match the existing value"; update.go only conflicts on modified or added fields."""
    obj = server_side_apply(
        _live("kubectl-edit"),
        _deployment(3),
        manager="flux",
        force=False,
        api_version="apps/v1",
        now=T0,
    )
    entries = _by_manager(obj)
    assert "f:replicas" in entries["flux/Apply"]["fieldsV1"]["f:spec"]
    assert "f:replicas" in entries["kubectl-edit/Update"]["fieldsV1"]["f:spec"]


def test_fields_dropped_from_the_applied_config_are_removed_unless_owned() -> None:
    """structured-merge-diff update.go prune: a field the applier applied before and no
    longer applies is removed, unless another manager still owns it."""
    first = server_side_apply(
        None,
        _deployment(2, {"a": "1", "b": "2", "c": "3"}),
        manager="flux",
        force=False,
        api_version="apps/v1",
        now=T0,
    )
    shared = copy.deepcopy(first)
    shared["metadata"]["labels"]["c"] = "3"
    shared["metadata"]["managedFields"].append(
        {
            "manager": "other",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T18:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:c": {}}}},
        }
    )
    second = server_side_apply(
        shared,
        _deployment(2, {"a": "1"}),
        manager="flux",
        force=False,
        api_version="apps/v1",
        now=T0,
    )
    assert second["metadata"]["labels"] == {"a": "1", "c": "3"}
    third = server_side_apply(
        second, _deployment(2), manager="flux", force=False, api_version="apps/v1", now=T0
    )
    assert third["metadata"]["labels"] == {"c": "3"}


def test_update_after_apply_takes_the_field_from_the_applier() -> None:
    """update.go Updater.Update: an Update that modifies an applied field takes it."""
    applied = server_side_apply(
        None, _deployment(2), manager="flux", force=False, api_version="apps/v1", now=T0
    )
    edited = copy.deepcopy(applied)
    edited["spec"]["replicas"] = 4
    fields = record_update(
        applied,
        edited,
        manager="kubectl-edit",
        api_version="apps/v1",
        now=T0 + timedelta(seconds=1),
    )
    entries = _by_manager(fields)
    assert "f:replicas" not in entries["flux/Apply"]["fieldsV1"]["f:spec"]
    assert entries["kubectl-edit/Update"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_apply_with_managed_fields_in_the_config_is_bad_request() -> None:
    """internal/fieldmanager.go Apply: "metadata.managedFields must be nil" (400)."""
    applied = _deployment(1)
    applied["metadata"]["managedFields"] = []
    with pytest.raises(PatchError) as caught:
        server_side_apply(None, applied, manager="flux", force=False, api_version="apps/v1", now=T0)
    assert (caught.value.status, caught.value.message) == (
        400,
        "metadata.managedFields must be nil",
    )


# ---- FieldsV1 -----------------------------------------------------------------------------


def test_fields_v1_round_trips_and_prints_paths_as_fieldpath_does() -> None:
    """structured-merge-diff fieldpath serialize.go ("." for a member with children) and
    Path.String() ('.spec.containers[name="app"].env[name="X"]', seen in gitpod-io/gitpod
    #16901's conflict message)."""
    fields = {
        "f:spec": {
            "f:containers": {
                'k:{"name":"app"}': {".": {}, "f:env": {'k:{"name":"X"}': {".": {}, "f:value": {}}}}
            }
        },
        "f:metadata": {"f:finalizers": {'v:"x"': {}}},
    }
    paths = fieldsets.decode(fields)
    assert fieldsets.encode(paths) == {
        "f:metadata": fields["f:metadata"],
        **{"f:spec": fields["f:spec"]},
    }
    printed = {fieldsets.path_string(p) for p in paths}
    assert '.spec.containers[name="app"].env[name="X"].value' in printed
    assert '.metadata.finalizers[="x"]' in printed
