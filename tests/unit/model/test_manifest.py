"""M2: sanitised objects, rendered as stable YAML (same object, same bytes)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.model.manifest import parse, render, sanitise

LIVE_CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "app",
        "namespace": "team-a",
        "uid": "4f9c",
        "resourceVersion": "812",
        "generation": 3,
        "creationTimestamp": "2026-11-29T10:00:00Z",
        "managedFields": [{"manager": "kubectl-edit"}],
        "ownerReferences": [{"kind": "X"}],
        "finalizers": ["x"],
        "labels": {"tier": "web", "kustomize.toolkit.fluxcd.io/name": "apps"},
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "argocd.argoproj.io/tracking-id": "a:b",
            "argocd.argoproj.io/sync-wave": "2",
        },
    },
    "data": {"b.conf": "x = 1\ny = 2\n", "a": "1"},
    "status": {"phase": "whatever"},
}


def test_sanitise_keeps_payload_and_drops_server_state() -> None:
    clean = sanitise(LIVE_CONFIGMAP)
    assert clean == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "app",
            "namespace": "team-a",
            "labels": {"tier": "web"},
            "annotations": {"argocd.argoproj.io/sync-wave": "2"},
        },
        "data": {"b.conf": "x = 1\ny = 2\n", "a": "1"},
    }


def test_empty_bookkeeping_maps_disappear() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "annotations": {"kubectl.kubernetes.io/restartedAt": "x"}},
    }
    assert sanitise(obj)["metadata"] == {"name": "a"}


def test_server_filled_service_fields_are_dropped() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]},
    }
    assert sanitise(svc)["spec"] == {"ports": [{"port": 80}]}


def test_render_orders_head_first_then_sorted_with_two_space_indent() -> None:
    text = render(sanitise(LIVE_CONFIGMAP)).decode()
    assert text == (
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: app\n"
        "  namespace: team-a\n"
        "  labels:\n"
        "    tier: web\n"
        "  annotations:\n"
        "    argocd.argoproj.io/sync-wave: '2'\n"
        "data:\n"
        "  a: '1'\n"
        "  b.conf: |\n"
        "    x = 1\n"
        "    y = 2\n"
    )


def test_key_order_of_the_input_does_not_change_the_bytes() -> None:
    reordered = dict(reversed(list(LIVE_CONFIGMAP.items())))
    reordered["data"] = dict(reversed(list(LIVE_CONFIGMAP["data"].items())))
    assert render(sanitise(reordered)) == render(sanitise(LIVE_CONFIGMAP))


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=30))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(spec=st.dictionaries(st.text(min_size=1, max_size=8), _values, max_size=5))
def test_render_round_trips_any_payload(spec: dict[str, Any]) -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }
    data = render(obj)
    assert parse(data) == [obj]
    assert render(parse(data)[0]) == data
