"""M10 beyond core Secrets (the reliability probe's Secret-shaped CR): anything of kind
``Secret`` in any group, and
the kinds a GitTarget's ``spec.sensitive`` names, reach the branch as identity only and are
refused there like core Secrets."""

from __future__ import annotations

from typing import Any

from services.watcher.emit import object_event
from shared.decide.watches import ServedTarget, watch_spec
from shared.model.crds import parse_git_target
from shared.model.events import OPERATIONS
from shared.model.ids import BranchKey
from shared.model.resources import ApiResource

WIDGETS = ApiResource("example.com", "v1", "widgets", "Widget", True)
CR_SECRETS = ApiResource("example.com", "v1", "secrets", "Secret", True)
CONFIGMAPS = ApiResource("", "v1", "configmaps", "ConfigMap", True)


def _served(sensitive: list[dict[str, str]] | None = None) -> ServedTarget:
    spec: dict[str, Any] = {"providerRef": {"name": "p"}, "branch": "main", "path": "x"}
    if sensitive is not None:
        spec["sensitive"] = sensitive
    target = parse_git_target(
        {"metadata": {"namespace": "t3", "name": "t", "uid": "u"}, "spec": spec}
    )
    return ServedTarget(target, BranchKey("bk"))


def _obj(resource: ApiResource) -> dict[str, Any]:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": "crsec", "namespace": "t3", "uid": "o"},
        "data": {"password": "Q1JTRUNSRVQtdmFsdWU="},
    }


def _event(served: ServedTarget, resource: ApiResource) -> Any:
    spec = watch_spec(served, resource, frozenset(OPERATIONS))
    return object_event(spec, "CREATE", _obj(resource), 1.0)


def test_a_secret_kind_of_any_group_carries_its_identity_only() -> None:
    event = _event(_served(), CR_SECRETS)
    assert event.sensitive
    assert "data" not in (event.body or {})
    assert "Q1JTRUNSRVQtdmFsdWU=" not in str(event.body)


def test_kinds_the_gittarget_names_sensitive_are_refused_too() -> None:
    assert not _event(_served(), WIDGETS).sensitive
    by_kind = _event(_served([{"group": "example.com", "kind": "Widget"}]), WIDGETS)
    assert by_kind.sensitive and "data" not in (by_kind.body or {})
    whole_group = _event(_served([{"group": "example.com", "kind": "*"}]), WIDGETS)
    assert whole_group.sensitive
    core = _served([{"group": "", "kind": "ConfigMap"}])
    assert _event(core, CONFIGMAPS).sensitive
    other_group = _served([{"group": "other.io", "kind": "Widget"}])
    assert not _event(other_group, WIDGETS).sensitive
