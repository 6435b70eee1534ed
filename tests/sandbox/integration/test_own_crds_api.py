"""Our CRDs' rules, enforced by the sandbox API server as a cluster enforces them (issue 3).

Each bad object is sent through the official client; the server answers 422 Invalid with the
CRD's own CEL message (behaviour.md §1), and immutable fields refuse an update.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.integration

GROUP, VERSION, NS = "gitopsreverser.io", "v1alpha1", "default"


def _target(name: str, **spec: Any) -> dict[str, Any]:
    body = {"providerRef": {"name": "gp"}, "branch": "main", "path": "apps", **spec}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GitTarget",
        "metadata": {"name": name},
        "spec": body,
    }


def _refused(api: client.CustomObjectsApi, body: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_custom_object(GROUP, VERSION, NS, "gittargets", body)
    assert caught.value.status == 422
    return str(json.loads(caught.value.body)["message"])


KS = {"name": "apps", "namespace": "flux-system"}


def test_exactly_one_applier_ref(api: client.CustomObjectsApi) -> None:
    both = _target("both", applier={"kustomizationRef": KS, "applicationRef": KS})
    assert "exactly one of" in _refused(api, both)
    neither = _target("neither", applier={"quietPeriod": "5s"})
    assert "exactly one of" in _refused(api, neither)


def test_quiet_period_is_refused_with_an_application(api: client.CustomObjectsApi) -> None:
    body = _target("argo", applier={"applicationRef": KS, "quietPeriod": "5s"})
    assert "quietPeriod" in _refused(api, body)


@pytest.mark.parametrize("path", ["/abs", "a/../b", ".."])
def test_paths_must_stay_in_the_repository(api: client.CustomObjectsApi, path: str) -> None:
    assert "spec.path" in _refused(api, _target(f"p{abs(hash(path)) % 1000}", path=path))


def test_identity_fields_are_immutable(api: client.CustomObjectsApi) -> None:
    made: dict[str, Any] = api.create_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, NS, "gittargets", _target("fixed")
    )
    assert made["spec"]["clusterProviderRef"] == {"name": "default"}, "defaulted by the schema"
    for field, value in (("branch", "dev"), ("path", "other"), ("providerRef", {"name": "x"})):
        with pytest.raises(ApiException) as caught:
            api.patch_namespaced_custom_object(
                GROUP, VERSION, NS, "gittargets", "fixed", {"spec": {field: value}}
            )
        assert caught.value.status == 422
        assert "immutable" in json.loads(caught.value.body)["message"]


def test_a_valid_gittarget_with_a_kustomization_is_accepted(
    api: client.CustomObjectsApi,
) -> None:
    made: dict[str, Any] = api.create_namespaced_custom_object(  # type: ignore[assignment]
        GROUP,
        VERSION,
        NS,
        "gittargets",
        _target("ok", applier={"kustomizationRef": KS, "quietPeriod": "45s"}),
    )
    assert made["spec"]["onRefusal"] == "None" and made["spec"]["prune"]["mode"] == "OnEvent"
    assert "quietPeriod" in made["spec"]["applier"]
