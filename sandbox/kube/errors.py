"""Kubernetes API errors, worded and shaped as kube-apiserver words and shapes them.

Every failure leaves the server as a ``Status`` object (kind Status, apiVersion v1, status
Failure, message, reason, details, code), because clients branch on ``reason`` and ``code``
and people read ``message``. The wording follows k8s.io/apimachinery/pkg/api/errors
(``NewNotFound``, ``NewAlreadyExists``, ``NewConflict``, ``NewInvalid``, ``NewForbidden``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OPTIMISTIC_LOCK_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


@dataclass(frozen=True, slots=True)
class Cause:
    """One field-level reason of an Invalid error (``details.causes[]``)."""

    field: str
    reason: str
    message: str


class ApiError(Exception):
    """A request the server refuses; ``status_body()`` is what goes on the wire."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.metadata = metadata or {}  # ListMeta of the Status (an expired list's continue)

    def status_body(self) -> dict[str, Any]:
        """The ``Status`` object for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.metadata),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(resource: str, group: str) -> str:
    """``configmaps`` or ``deployments.apps``: a GroupResource as the server prints it."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """StatusDetails as Go encodes it: empty fields are omitted."""
    details: dict[str, Any] = {}
    for key, value in (("name", name), ("group", group), ("kind", kind)):
        if value:
            details[key] = value
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    """404 NotFound for a named object."""
    message = f'{qualified(resource, group)} "{name}" not found'
    return ApiError(404, "NotFound", message, _details(name, group, resource))


def path_not_found() -> ApiError:
    """404 for a URL that names no resource at all."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    """409 AlreadyExists on a create of a taken name."""
    message = f'{qualified(resource, group)} "{name}" already exists'
    return ApiError(409, "AlreadyExists", message, _details(name, group, resource))


def conflict(resource: str, group: str, name: str, why: str = OPTIMISTIC_LOCK_MESSAGE) -> ApiError:
    """409 Conflict: a stale resourceVersion or a failed precondition."""
    message = f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, resource))


def invalid(kind: str, group: str, name: str, causes: Sequence[Cause]) -> ApiError:
    """422 Invalid with one cause per field error, worded as ``NewInvalid``."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    message = f'{qualified(kind, group)} "{name}" is invalid: {joined}'
    details = _details(name, group, kind)
    details["causes"] = [
        {"reason": c.reason, "message": c.message, "field": c.field} for c in causes
    ]
    return ApiError(422, "Invalid", message, details)


def bad_request(message: str) -> ApiError:
    """400 BadRequest (decoding errors, strict field validation, bad selectors)."""
    return ApiError(400, "BadRequest", message)


def unauthorized() -> ApiError:
    """401 for a bearer token that maps to nobody."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(resource: str, group: str, name: str, why: str) -> ApiError:
    """403 Forbidden worded as ``NewForbidden`` around the authorizer's sentence."""
    target = qualified(resource, group)
    head = f'{target} "{name}"' if name else target
    details = _details(name, group, resource)
    return ApiError(403, "Forbidden", f"{head} is forbidden: {why}", details)


def method_not_allowed(resource: str, group: str, action: str) -> ApiError:
    """405 for a verb the resource does not serve."""
    message = f'{action} is not supported on resources of kind "{qualified(resource, group)}"'
    return ApiError(405, "MethodNotAllowed", message, _details("", group, resource))


def unsupported_media_type(accepted: Sequence[str]) -> ApiError:
    """415 for a patch type the resource does not accept."""
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    return ApiError(415, "UnsupportedMediaType", message)


def expired(message: str) -> ApiError:
    """410 Expired: a resourceVersion older than the kept history."""
    return ApiError(410, "Expired", message)


def internal(message: str) -> ApiError:
    """500 for a fault of the double itself."""
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")
