"""URL and verb parsing of resource requests, as apiserver's RequestInfoFactory does it.

``/api/v1/...`` and ``/apis/<group>/<version>/...``, then ``namespaces/<ns>/<resource>...``
or ``<resource>...``, then an optional name and subresource. A request for a namespace
object itself (``/api/v1/namespaces/<name>``) carries that name as its namespace, as the
real factory sets it (pkg/endpoints/request/requestinfo.go). The verb comes from the HTTP
method, whether a name is present, and ``watch=true|1``.
"""

from __future__ import annotations

from dataclasses import dataclass

# requestinfo.go namespaceSubresources: after /namespaces/<ns>/, these name a subresource of
# the namespace rather than a resource inside it.
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_TRUE = ("true", "1")


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Where a resource request points."""

    group: str
    version: str
    namespace: str
    resource: str
    name: str = ""
    subresource: str = ""
    namespaced_path: bool = False


def parse_resource_path(path: str) -> RequestInfo | None:
    """The resource a path names, or None when it names none (discovery or unknown)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace, namespaced = "", False
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest, namespaced = rest[2:], True
    if len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    return RequestInfo(group, version, namespace, rest[0], name, sub, namespaced)


def request_verb(method: str, info: RequestInfo, watch_param: str | None) -> str:
    """The authorization verb of a request."""
    watching = (watch_param or "").lower() in _TRUE
    if method == "GET":
        if watching:
            return "watch"
        return "get" if info.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if info.name else "deletecollection"
    return method.lower()
