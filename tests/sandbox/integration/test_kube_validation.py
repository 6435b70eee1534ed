"""Custom resource validation and field validation modes on the Kubernetes API double."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import request

pytestmark = pytest.mark.integration

GIT_PATH = "/apis/source.toolkit.fluxcd.io/v1/namespaces/default/gitrepositories"
MERGE = "application/merge-patch+json"


def _repo(name: str = "r", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_schema_violations_are_422_worded_as_the_server(kube: KubeApiServer) -> None:
    """A CR failing its schema is 422 Invalid, 'Kind.group "name" is invalid: field: ...'.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go
    NewInvalid (message "%s %q is invalid: %v" over the aggregated field errors, causes with
    reason/message/field).
    """
    code, status, _ = request(kube, "POST", GIT_PATH, _repo(interval="1m"))
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'GitRepository.source.toolkit.fluxcd.io "r" is invalid: [spec.url: Required value, '
        '<nil>: Invalid value: "null": some validation rules were not checked because the '
        "object was invalid; correct the existing errors to complete validation]"
    )
    assert status["details"]["kind"] == "GitRepository"
    assert status["details"]["group"] == "source.toolkit.fluxcd.io"
    assert {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.url",
    } in status["details"]["causes"]


def test_strict_field_validation_is_400_strict_decoding_error(kube: KubeApiServer) -> None:
    """fieldValidation=Strict refuses unknown fields with 400 'strict decoding error'.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#field-validation ("Strict:
    This will fail the request with a BadRequest error if any unknown fields would be
    dropped") and apiserver handlers/rest.go transformDecodeError.
    """
    body = _repo(url="https://example.com/r.git", interval="1m", foo=1)
    code, status, _ = request(kube, "POST", GIT_PATH + "?fieldValidation=Strict", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'GitRepository in version "v1" cannot be handled as a '
        'GitRepository: strict decoding error: unknown field "spec.foo"'
    )


def test_warn_is_the_default_and_prunes_with_a_warning_header(kube: KubeApiServer) -> None:
    """Without fieldValidation the unknown field is pruned and a 299 Warning names it.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#field-validation ("Warn
    (default): ... the request will succeed and a warning will be sent") and
    kubernetes.io/blog/2020/09/03/warnings/ (Warning: 299 - "...").
    """
    body = _repo(url="https://example.com/r.git", interval="1m", foo=1)
    code, obj, headers = request(kube, "POST", GIT_PATH, body)
    assert code == 201 and "foo" not in obj["spec"]
    assert headers.get("Warning") == '299 - "unknown field \\"spec.foo\\""'


def test_ignore_prunes_silently(kube: KubeApiServer) -> None:
    """fieldValidation=Ignore drops unknown fields without a warning.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#field-validation ("Ignore:
    ... silently drop any unknown or duplicate fields").
    """
    body = _repo(url="https://example.com/r.git", interval="1m", foo=1)
    code, obj, headers = request(kube, "POST", GIT_PATH + "?fieldValidation=Ignore", body)
    assert code == 201 and "foo" not in obj["spec"]
    assert headers.get("Warning") is None


def test_strict_patch_is_422_on_the_patch(kube: KubeApiServer) -> None:
    """A strict patch adding an unknown field is refused as an invalid patch (422).

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
    jsonPatcher.applyPatchToCurrentObject (NewInvalid on field "patch" with the strict
    decoding error).
    """
    request(kube, "POST", GIT_PATH, _repo(url="https://example.com/r.git", interval="1m"))
    code, status, _ = request(
        kube, "PATCH", f"{GIT_PATH}/r?fieldValidation=Strict", {"spec": {"bar": 2}}, MERGE
    )
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].endswith('strict decoding error: unknown field "spec.bar"')
    assert status["details"]["causes"][0]["field"] == "patch"


def test_unknown_field_validation_value_is_400(kube: KubeApiServer) -> None:
    """An unsupported fieldValidation value is refused.

    Fact: kubernetes/kubernetes apimachinery meta/v1/validation ValidateFieldValidation
    (Ignore, Warn, Strict only).
    """
    code, status, _ = request(
        kube,
        "POST",
        GIT_PATH + "?fieldValidation=Loud",
        _repo(url="https://example.com/r.git", interval="1m"),
    )
    assert code == 400 and "fieldValidation" in status["message"]


def test_cel_rule_message_is_returned(kube: KubeApiServer) -> None:
    """A CRD's x-kubernetes-validations rule that fails answers 422 with the rule's message.

    Fact: kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/
    custom-resource-definitions/#validation-rules (message returned on failure); the rule is
    the Flux Receiver CRD's own (/work/shared/crds/fluxcd, "generic-oidc receivers must
    define at least one oidcProvider").
    """
    path = "/apis/notification.toolkit.fluxcd.io/v1/namespaces/default/receivers"
    body = {
        "apiVersion": "notification.toolkit.fluxcd.io/v1",
        "kind": "Receiver",
        "metadata": {"name": "rcv"},
        "spec": {"type": "generic-oidc", "resources": [{"kind": "GitRepository", "name": "r"}]},
    }
    code, status, _ = request(kube, "POST", path, body)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith('Receiver.notification.toolkit.fluxcd.io "rcv" is invalid')
    assert "generic-oidc receivers must define at least one oidcProvider" in status["message"]


def test_namespace_names_are_dns_labels(kube: KubeApiServer) -> None:
    """Namespaces need RFC 1123 labels: a dotted name is 422.

    Fact: kubernetes/kubernetes apimachinery pkg/api/validation ValidateNamespaceName
    (= NameIsDNSLabel).
    """
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    code, status, _ = request(kube, "POST", "/api/v1/namespaces", body)
    assert code == 422
    assert "a lowercase RFC 1123 label" in status["message"]
