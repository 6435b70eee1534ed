"""The CommitRequest CRD's rules, enforced by the sandbox API server as a cluster would (P6).

Each bad spec is sent through the official client and refused with 422 Invalid; the whole
spec is immutable (CEL ``self == oldSelf``), while the status subresource stays writable.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.integration

GROUP, VERSION, NS, PLURAL = "gitopsreverser.io", "v1alpha1", "default", "commitrequests"


def _request(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CommitRequest",
        "metadata": {"name": name},
        "spec": {"targetRef": {"name": "apps"}, **spec},
    }


def _create(api: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = api.create_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, NS, PLURAL, body
    )
    return made


def _refused(api: client.CustomObjectsApi, body: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as caught:
        _create(api, body)
    assert caught.value.status == 422
    return str(json.loads(caught.value.body)["message"])


def test_a_valid_request_is_accepted_and_defaulted(api: client.CustomObjectsApi) -> None:
    """P6: closeDelaySeconds defaults to 0; a multi-line message is allowed."""
    made = _create(api, _request("ok", message="save: the release\n\nwith a body"))
    assert made["spec"]["closeDelaySeconds"] == 0
    assert made["spec"]["message"].count("\n") == 2


@pytest.mark.parametrize(
    ("name", "spec", "field"),
    [
        ("no-target", {"targetRef": {}}, "spec.targetRef.name"),
        ("empty-message", {"message": ""}, "spec.message"),
        ("long-message", {"message": "x" * 1025}, "spec.message"),
        ("tab", {"message": "a\tb"}, "spec.message"),
        ("escape", {"message": "a\x1b[31mred"}, "spec.message"),
        ("delay-high", {"closeDelaySeconds": 301}, "spec.closeDelaySeconds"),
        ("delay-low", {"closeDelaySeconds": -1}, "spec.closeDelaySeconds"),
    ],
)
def test_a_bad_spec_is_refused(
    api: client.CustomObjectsApi, name: str, spec: dict[str, Any], field: str
) -> None:
    """P6: the schema's bounds (message 1-1024 characters without control characters but
    newline, closeDelaySeconds 0-300, a named GitTarget) are the API's, not ours."""
    assert field in _refused(api, _request(name, **spec))


def test_the_spec_cannot_change(api: client.CustomObjectsApi) -> None:
    """P6: the whole spec is immutable; a request is one-shot."""
    _create(api, _request("fixed", message="one", closeDelaySeconds=5))
    for change in (
        {"message": "two"},
        {"closeDelaySeconds": 6},
        {"targetRef": {"name": "other"}},
    ):
        with pytest.raises(ApiException) as caught:
            api.patch_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, "fixed", {"spec": change}
            )
        assert caught.value.status == 422
        assert "immutable" in json.loads(caught.value.body)["message"]
    status = {"status": {"branch": "main", "sha": "a" * 40}}
    written: dict[str, Any] = api.patch_namespaced_custom_object_status(  # type: ignore[assignment]
        GROUP, VERSION, NS, PLURAL, "fixed", status
    )
    assert written["status"]["sha"] == "a" * 40
    assert written["spec"]["message"] == "one"
