"""Identities, rules, 401/403 and SelfSubjectAccessReview on the Kubernetes API double."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import AccessRule, KubeApiServer

pytestmark = pytest.mark.integration

TOKENS = {"tok-reader": "reader", "tok-admin": "admin"}
RULES = [
    AccessRule("reader", ("get", "list", "watch"), ("",), ("configmaps",), ("team",)),
    AccessRule("admin", ("*",), ("*",), ("*",)),
    AccessRule("reader", ("patch",), ("apps",), ("deployments/status",)),
]


@pytest.fixture
def guarded() -> Iterator[KubeApiServer]:
    """A server with tokens and rules."""
    server = KubeApiServer(tokens=TOKENS, rules=RULES)
    server.start()
    yield server
    server.stop()


def _review(server: KubeApiServer, token: str, **attrs: str) -> client.V1SubjectAccessReviewStatus:
    api = client.AuthorizationV1Api(server.api_client(token))
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(**attrs)
        )
    )
    return api.create_self_subject_access_review(review).status


def test_unknown_token_is_401(guarded: KubeApiServer) -> None:
    """A bearer token that maps to nobody is 401 Unauthorized.

    Fact: kubernetes.io/docs/reference/access-authn-authz/authentication/ ("If the request
    cannot be authenticated, it is rejected with HTTP status code 401").
    """
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(guarded.api_client("nope")).list_namespace()
    assert caught.value.status == 401
    assert json.loads(caught.value.body)["reason"] == "Unauthorized"


def test_forbidden_is_worded_as_the_authorizer(guarded: KubeApiServer) -> None:
    """A request no rule allows is 403 with the authorizer's sentence.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
    responsewriters/errors.go forbiddenMessage and apimachinery errors.NewForbidden.
    """
    core = client.CoreV1Api(guarded.api_client("tok-reader"))
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("other")
    body = json.loads(caught.value.body)
    assert (caught.value.status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        'configmaps is forbidden: User "reader" cannot list resource '
        '"configmaps" in API group "" in the namespace "other"'
    )
    with pytest.raises(ApiException) as caught:
        core.list_namespace()
    assert json.loads(caught.value.body)["message"] == (
        'namespaces is forbidden: User "reader" cannot list resource "namespaces" in API '
        'group "" at the cluster scope'
    )


def test_rules_allow_per_namespace_and_subresource(guarded: KubeApiServer) -> None:
    """Rules name verbs, groups, resources (with `resource/status`) and namespaces.

    Fact: kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources
    (subresources as "pods/log"; Role rules scoped to a namespace).
    """
    client.CoreV1Api(guarded.api_client("tok-admin")).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="team"))
    )
    listed = client.CoreV1Api(guarded.api_client("tok-reader")).list_namespaced_config_map("team")
    assert listed.items == []
    apps = client.AppsV1Api(guarded.api_client("tok-reader"))
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment("d", "team", {"spec": {}})
    assert caught.value.status == 403
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment_status("d", "team", {"status": {}})
    assert caught.value.status == 404  # allowed through, then the object is missing


def test_self_subject_access_review_answers_from_the_rules(guarded: KubeApiServer) -> None:
    """SelfSubjectAccessReview says allowed or not for the requesting user.

    Fact: kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access
    and /work/shared/facts/webhooks-git-libs.md §3.6 (create_self_subject_access_review,
    read .status.allowed).
    """
    assert (
        _review(guarded, "tok-reader", verb="list", resource="configmaps", namespace="team").allowed
        is True
    )
    denied = _review(guarded, "tok-reader", verb="delete", resource="configmaps", namespace="team")
    assert denied.allowed is False and not denied.denied
    assert (
        _review(guarded, "tok-admin", verb="delete", group="apps", resource="deployments").allowed
        is True
    )


def test_without_rules_everything_is_allowed(kube: KubeApiServer) -> None:
    """With no rules configured every request and every review is allowed.

    Fact: the issue's definition of the double ("with no rules configured everything is
    allowed", issue 2 §2).
    """
    api = client.AuthorizationV1Api(kube.api_client())
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(verb="delete", resource="secrets")
        )
    )
    assert api.create_self_subject_access_review(review).status.allowed is True
    assert client.CoreV1Api(kube.api_client()).list_namespace().items
