"""The GitTarget's hand controls in its CRD: suspend, onRefusal PushEmptyCommit, status.remote
and status.lastHandledReconcileAt (P7, P8, P10, P11), through the sandbox's validator as
kube-apiserver applies the schema and its CEL rules. The complete example carrying every field
is in ``test_own_crds.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox import paths
from tests.sandbox.unit.test_own_crds import _check, _example, _fields, _refused_with, schemas

__all__ = ["schemas"]  # the module's fixture, used by the tests below

PUSH_EMPTY = "spec.onRefusal PushEmptyCommit is for a GitTarget without spec.applier"


def test_push_empty_commit_is_refused_beside_an_applier(
    schemas: dict[str, dict[str, Any]],
) -> None:
    """P11: PushEmptyCommit is for a GitTarget whose applier is not named; with one, Reapply."""
    target = _example("GitTarget")
    target["spec"]["onRefusal"] = "PushEmptyCommit"
    message = PUSH_EMPTY + "; with an applier use Reapply"
    _refused_with(schemas, target, "spec", message)


def test_push_empty_commit_without_an_applier_is_valid(
    schemas: dict[str, dict[str, Any]],
) -> None:
    target = _example("GitTarget")
    target["spec"]["onRefusal"] = "PushEmptyCommit"
    del target["spec"]["applier"]
    assert _check(schemas, target).errors == []


def test_another_on_refusal_value_is_refused(schemas: dict[str, dict[str, Any]]) -> None:
    target = _example("GitTarget")
    target["spec"]["onRefusal"] = "EmptyCommit"
    assert _fields(_check(schemas, target)) == ["spec.onRefusal"]


@pytest.mark.parametrize("value", ["yes", 1])
def test_suspend_is_a_boolean(schemas: dict[str, dict[str, Any]], value: object) -> None:
    target = _example("GitTarget")
    target["spec"]["suspend"] = value
    assert _fields(_check(schemas, target)) == ["spec.suspend"]


def test_suspend_has_no_default(schemas: dict[str, dict[str, Any]]) -> None:
    """Absent means false; the API server writes nothing for it."""
    target = _example("GitTarget")
    del target["spec"]["suspend"]
    checked = _check(schemas, target)
    assert checked.errors == [] and "suspend" not in checked.obj["spec"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("verifiedBy", "Pull"),
        ("revision", "main"),
        ("lastVerifiedAt", "yesterday"),
    ],
)
def test_status_remote_is_checked(
    schemas: dict[str, dict[str, Any]], field: str, value: str
) -> None:
    """P10: verifiedBy is Push or Fetch, revision a commit id, lastVerifiedAt a time."""
    target = _example("GitTarget")
    target["status"]["remote"][field] = value
    assert _fields(_check(schemas, target)) == [f"status.remote.{field}"]


def test_last_handled_reconcile_at_is_bounded(schemas: dict[str, dict[str, Any]]) -> None:
    """P8: status holds the annotation's value up to 1024 characters (the product refuses a
    longer request with a condition instead of writing it)."""
    target = _example("GitTarget")
    target["status"]["lastHandledReconcileAt"] = "x" * 1025
    assert _fields(_check(schemas, target)) == ["status.lastHandledReconcileAt"]


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses a mapping key given twice (PyYAML keeps the last silently)."""


def _no_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(k) for k, _ in node.value]
    twice = sorted({str(k) for k in keys if keys.count(k) > 1})
    assert not twice, f"line {node.start_mark.line + 1}: {', '.join(twice)} given twice"
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


@pytest.mark.parametrize("path", paths.own_crd_files(), ids=lambda p: p.name)
def test_no_crd_gives_a_key_twice(path: Path) -> None:
    """A key given twice keeps only its last value, so two merged changes that each add
    ``x-kubernetes-validations`` to one node would silently drop one side's rules (the
    serializeNamespace rule was lost that way once, 2026-12-06)."""
    with path.open(encoding="utf-8") as handle:
        yaml.load(handle, Loader=_StrictLoader)
