"""get, list, create, update and delete on the Kubernetes API double (official client)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import request

pytestmark = pytest.mark.integration

FLUX = ("source.toolkit.fluxcd.io", "v1")


def _cm(name: str, labels: dict[str, str] | None = None, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    assert body["kind"] == "Status" and body["status"] == "Failure"
    return body


def _git_repo(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name},
        "spec": {"url": "https://example.com/r.git", "interval": "1m"},
    }


def test_create_get_and_409_already_exists(kube: KubeApiServer) -> None:
    """Create sets uid/creationTimestamp; a second create is 409 AlreadyExists.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go
    NewAlreadyExists ('%s "%s" already exists'); rest.FillObjectMetaSystemFields.
    """
    core = client.CoreV1Api(kube.api_client())
    created = core.create_namespaced_config_map("default", _cm("a", k="v"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert core.read_namespaced_config_map("a", "default").data == {"k": "v"}
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", _cm("a"))
    body = _status(caught.value)
    assert (caught.value.status, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'configmaps "a" already exists'
    assert body["details"] == {"name": "a", "kind": "configmaps"}


def test_create_in_missing_namespace_is_404_and_generate_name_works(kube: KubeApiServer) -> None:
    """Objects need an existing namespace (404 namespaces "x" not found); generateName fills in.

    Fact: NamespaceLifecycle admission (kubernetes/kubernetes plugin/pkg/admission/
    namespace/lifecycle) answers NewNotFound(namespaces, ns); names.SimpleNameGenerator
    appends 5 random characters.
    """
    core = client.CoreV1Api(kube.api_client())
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("nowhere", _cm("a"))
    assert caught.value.status == 404
    assert _status(caught.value)["message"] == 'namespaces "nowhere" not found'
    generated = core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    )
    assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) == 9


def test_default_namespaces_exist(kube: KubeApiServer) -> None:
    """default, kube-system and kube-public exist at start, as on a new cluster.

    Fact: kube-apiserver's system namespaces controller creates them (kubernetes/kubernetes
    pkg/controlplane/controller/systemnamespaces).
    """
    names = {n.metadata.name for n in client.CoreV1Api(kube.api_client()).list_namespace().items}
    assert {"default", "kube-system", "kube-public"} <= names


def test_list_selectors_and_all_namespaces(kube: KubeApiServer) -> None:
    """Label selectors (=, ==, !=, in, notin, exists, !exists), field selectors, and -A.

    Fact: kubernetes.io/docs/concepts/overview/working-with-objects/labels/ (equality- and
    set-based requirements) and field-selectors/ (metadata.name, metadata.namespace).
    """
    core = client.CoreV1Api(kube.api_client())
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="other")))
    core.create_namespaced_config_map("default", _cm("a", {"tier": "web", "env": "dev"}))
    core.create_namespaced_config_map("default", _cm("b", {"tier": "db"}))
    core.create_namespaced_config_map("other", _cm("c", {"tier": "web"}))

    def names(**kwargs: Any) -> list[str]:
        return [i.metadata.name for i in core.list_namespaced_config_map("default", **kwargs).items]

    assert names(label_selector="tier=web") == ["a"]
    assert names(label_selector="tier==db") == ["b"]
    assert names(label_selector="tier!=web") == ["b"]
    assert names(label_selector="tier in (web,db),env") == ["a"]
    assert names(label_selector="tier notin (web)") == ["b"]
    assert names(label_selector="!env") == ["b"]
    assert names(field_selector="metadata.name=b") == ["b"]
    everywhere = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=other")
    assert [i.metadata.name for i in everywhere.items] == ["c"]
    listed = core.list_config_map_for_all_namespaces()
    assert int(listed.metadata.resource_version) >= max(
        int(i.metadata.resource_version) for i in listed.items
    )


def test_bad_field_selector_is_400(kube: KubeApiServer) -> None:
    """An unsupported field label is 400 BadRequest.

    Fact: kubernetes/kubernetes pkg/registry/core/configmap/strategy.go GetAttrs (only
    metadata fields) and apimachinery fields parsing ('field label not supported').
    """
    core = client.CoreV1Api(kube.api_client())
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("default", field_selector="spec.x=1")
    assert caught.value.status == 400
    assert _status(caught.value)["message"] == "field label not supported: spec.x"


def test_update_conflict_and_unconditional_update(kube: KubeApiServer) -> None:
    """PUT with a stale resourceVersion is 409 Conflict; a PUT without one overwrites.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/registry/generic/registry/
    store.go Update (doUnconditionalUpdate when AllowUnconditionalUpdate; NewConflict with
    OptimisticLockErrorMsg).
    """
    core = client.CoreV1Api(kube.api_client())
    first = core.create_namespaced_config_map("default", _cm("a", k="1"))
    first.data = {"k": "2"}
    core.replace_namespaced_config_map("a", "default", first)
    first.data = {"k": "3"}
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("a", "default", first)
    body = _status(caught.value)
    assert (caught.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    first.metadata.resource_version = None
    assert core.replace_namespaced_config_map("a", "default", first).data == {"k": "3"}


def test_custom_resource_put_needs_resource_version(kube: KubeApiServer) -> None:
    """Custom resources do not allow unconditional updates: a PUT without rv is 422.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
    customresource/strategy.go AllowUnconditionalUpdate() false, and generic registry
    store.go ('must be specified for an update').
    """
    custom = client.CustomObjectsApi(kube.api_client())
    created = custom.create_namespaced_custom_object(
        *FLUX, "default", "gitrepositories", _git_repo("r")
    )
    del created["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as caught:
        custom.replace_namespaced_custom_object(*FLUX, "default", "gitrepositories", "r", created)
    body = _status(caught.value)
    assert caught.value.status == 422
    assert body["message"] == (
        'gitrepositories.source.toolkit.fluxcd.io "r" is invalid: '
        "metadata.resourceVersion: Invalid value: 0x0: must be specified "
        "for an update"
    )


def test_delete_returns_status_and_missing_is_404(kube: KubeApiServer) -> None:
    """Deleting a ConfigMap answers a Success Status; deleting it again is 404.

    Fact: kubernetes/kubernetes generic registry store.go finalizeDelete (Status with
    details.kind = resource unless ReturnDeletedObject) and configmap storage.go.
    """
    core = client.CoreV1Api(kube.api_client())
    created = core.create_namespaced_config_map("default", _cm("a"))
    status = core.delete_namespaced_config_map("a", "default")
    assert isinstance(status, dict)  # client 37 hands the Status back undeserialized
    assert status["status"] == "Success" and status["details"]["uid"] == created.metadata.uid
    assert status["details"]["kind"] == "configmaps"
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("a", "default")
    assert caught.value.status == 404


def test_delete_with_finalizers_marks_then_removes(kube: KubeApiServer) -> None:
    """With finalizers, delete sets deletionTimestamp (grace 0); removing them deletes it.

    Fact: kubernetes/kubernetes generic registry store.go markAsDeleting and
    ShouldDeleteDuringUpdate (errEmptiedFinalizers).
    """
    core = client.CoreV1Api(kube.api_client())
    cm = _cm("a")
    cm.metadata.finalizers = ["example.com/keep"]
    core.create_namespaced_config_map("default", cm)
    marked = core.delete_namespaced_config_map("a", "default")
    live = core.read_namespaced_config_map("a", "default")
    assert live.metadata.deletion_timestamp is not None
    assert live.metadata.deletion_grace_period_seconds == 0
    assert marked is not None
    core.patch_namespaced_config_map("a", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("a", "default")
    assert caught.value.status == 404


def test_delete_preconditions_conflict(kube: KubeApiServer) -> None:
    """DeleteOptions preconditions on uid or resourceVersion that do not hold are 409.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/storage/interfaces.go
    Preconditions.Check ('Precondition failed: UID in precondition: ...').
    """
    core = client.CoreV1Api(kube.api_client())
    core.create_namespaced_config_map("default", _cm("a"))
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="nope"))
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("a", "default", body=options)
    assert caught.value.status == 409
    assert "Precondition failed: UID in precondition: nope" in _status(caught.value)["message"]


def test_invalid_name_is_422_and_bad_configmap_data_is_400(kube: KubeApiServer) -> None:
    """Names must be DNS subdomains (422 Invalid); a ConfigMap value must be a string (400).

    Fact: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/validation/
    validation.go (RFC 1123 subdomain message) and apiserver handlers/rest.go
    transformDecodeError ('%s in version %q cannot be handled as a %s: %v').
    """
    core = client.CoreV1Api(kube.api_client())
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", _cm("Bad_Name"))
    body = _status(caught.value)
    assert caught.value.status == 422
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid '
        'value: "Bad_Name": a lowercase RFC 1123 subdomain'
    )
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": 1}}
    code, status, _ = request(kube, "POST", "/api/v1/namespaces/default/configmaps", raw)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number'
    )


def test_secret_string_data_is_folded_into_data(kube: KubeApiServer) -> None:
    """stringData is write-only: stored base64-encoded in data, type defaults to Opaque.

    Fact: kubernetes.io/docs/concepts/configuration/secret/ ("stringData ... merged into the
    data field"); pkg/apis/core/v1 conversion of Secret.StringData.
    """
    core = client.CoreV1Api(kube.api_client())
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="s"), string_data={"k": "v"})
    stored = core.create_namespaced_secret("default", secret)
    assert stored.data == {"k": "dg=="} and stored.string_data is None
    assert stored.type == "Opaque"


def test_instances_share_nothing(kube: KubeApiServer) -> None:
    """Two servers in one process keep separate objects and counters (one per cluster).

    Fact: the brief's requirement that several clusters run in one process (issue 2 §2).
    """
    other = KubeApiServer()
    other.start()
    try:
        client.CoreV1Api(kube.api_client()).create_namespaced_config_map("default", _cm("a"))
        listed = client.CoreV1Api(other.api_client()).list_namespaced_config_map("default")
        assert listed.items == []
    finally:
        other.stop()


def test_secret_data_must_be_base64_and_namespaces_must_agree(kube: KubeApiServer) -> None:
    """Secret data that is not base64 is 400; a body namespace unlike the URL's is 400.

    Fact: apiserver handlers/rest.go transformDecodeError (Secret.data is []byte, decoded
    from base64 by encoding/json: "illegal base64 data at input byte N") and handlers
    EnsureObjectNamespaceMatchesRequestNamespace ("the namespace of the provided object does
    not match the namespace sent on the request").
    """
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": "not base64!"},
    }
    code, status, _ = request(kube, "POST", "/api/v1/namespaces/default/secrets", secret)
    assert code == 400
    assert status["message"].startswith(
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data'
    )
    elsewhere = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "kube-system"},
    }
    code, status, _ = request(kube, "POST", "/api/v1/namespaces/default/configmaps", elsewhere)
    assert code == 400
    assert status["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


def test_unknown_paths_are_status_404(kube: KubeApiServer) -> None:
    """A resource the server does not serve is a 404 Status, not an HTML page.

    Fact: kubernetes/kubernetes apiserver pkg/endpoints/handlers/responsewriters (NotFound
    Status "the server could not find the requested resource").
    """
    code, status, _ = request(kube, "GET", "/api/v1/namespaces/default/pods")
    assert (code, status["kind"], status["reason"]) == (404, "Status", "NotFound")
    assert status["message"] == "the server could not find the requested resource"
