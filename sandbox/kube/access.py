"""Identities and permissions: bearer tokens to users, rules to allow or forbid requests.

A token maps to a user name; an unknown token is 401 Unauthorized. With rules configured,
each request's attributes (verb, API group, resource with subresource as ``resource/sub``,
namespace) must match some rule of that user, or the request is 403 Forbidden with the
sentence the RBAC authorizer path writes (apiserver
pkg/endpoints/handlers/responsewriters/errors.go ``forbiddenMessage``). A
SelfSubjectAccessReview is answered from the same rules, and (as the default
``system:basic-user`` ClusterRole grants) any authenticated user may create one. Like RBAC,
rules only allow: a request no rule allows has no opinion, so a review says
``allowed: false`` without ``denied``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import ApiError, bad_request, forbidden, unauthorized

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED_ADMIN = "system:admin"


@dataclass(frozen=True)
class AccessRule:
    """What one user may do; ``()`` namespaces means every namespace and cluster scope."""

    user: str
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attributes:
    """The authorization attributes of one resource request."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    @property
    def full_resource(self) -> str:
        """``deployments`` or ``deployments/status``, as rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _matches(values: tuple[str, ...], value: str) -> bool:
    return "*" in values or value in values


def _rule_allows(rule: AccessRule, attrs: Attributes) -> bool:
    return (
        _matches((rule.user,), attrs.user)
        and _matches(rule.verbs, attrs.verb)
        and _matches(rule.api_groups, attrs.group)
        and _matches(rule.resources, attrs.full_resource)
        and (not rule.namespaces or attrs.namespace in rule.namespaces)
    )


def _basic_user_allows(attrs: Attributes) -> bool:
    """The default ``system:basic-user`` binding: any authenticated user may review itself."""
    return (
        attrs.user != ANONYMOUS
        and attrs.verb == "create"
        and attrs.group == "authorization.k8s.io"
        and attrs.resource in ("selfsubjectaccessreviews", "selfsubjectrulesreviews")
    )


class Access:
    """Authentication and authorization of one API server."""

    def __init__(
        self, tokens: Mapping[str, str] | None, rules: Sequence[AccessRule] | None
    ) -> None:
        self._tokens = dict(tokens) if tokens is not None else None
        self._rules = tuple(rules) if rules is not None else None

    def authenticate(self, authorization: str | None) -> str:
        """The user behind an ``Authorization`` header (401 for an unknown bearer token)."""
        token = ""
        if authorization and authorization.lower().startswith("bearer "):
            token = authorization[len("bearer ") :].strip()
        if self._tokens is None:
            return UNAUTHENTICATED_ADMIN
        if not token:
            return ANONYMOUS
        user = self._tokens.get(token)
        if user is None:
            raise unauthorized()
        return user

    def allowed(self, attrs: Attributes) -> bool:
        """True when no rules are configured or some rule of the user allows the request."""
        if self._rules is None or _basic_user_allows(attrs):
            return True
        return any(_rule_allows(rule, attrs) for rule in self._rules)

    def check(self, attrs: Attributes) -> None:
        """Raise 403 Forbidden when the request is not allowed."""
        if not self.allowed(attrs):
            raise forbidden(attrs.resource, attrs.group, attrs.name, forbidden_sentence(attrs))

    def review(self, user: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a SelfSubjectAccessReview for ``user``."""
        spec = body.get("spec") or {}
        attrs = spec.get("resourceAttributes")
        if attrs is None and spec.get("nonResourceAttributes") is None:
            raise _review_invalid()
        allowed = self._rules is None if attrs is None else self.allowed(_review_attrs(user, attrs))
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = "allowed by the sandbox access rules"
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }


def _review_attrs(user: str, attrs: Mapping[str, Any]) -> Attributes:
    return Attributes(
        user=user,
        verb=attrs.get("verb", ""),
        group=attrs.get("group", ""),
        resource=attrs.get("resource", ""),
        subresource=attrs.get("subresource", ""),
        namespace=attrs.get("namespace", ""),
        name=attrs.get("name", ""),
    )


def _review_invalid() -> ApiError:
    return bad_request(
        "SelfSubjectAccessReview.authorization.k8s.io is invalid: spec.resourceAttributes: "
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
        "must be specified"
    )


def forbidden_sentence(attrs: Attributes) -> str:
    """The authorizer's sentence: who cannot do what, where."""
    head = (
        f'User "{attrs.user}" cannot {attrs.verb} resource "{attrs.full_resource}" '
        f'in API group "{attrs.group}"'
    )
    if attrs.namespace:
        return f'{head} in the namespace "{attrs.namespace}"'
    return f"{head} at the cluster scope"
