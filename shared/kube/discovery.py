"""What a cluster serves, read from its discovery documents and cached for a short while.

WatchRules name resources by plural and may say ``*``; the watcher needs each type's kind
and scope and the groups' preferred versions. Discovery is read from ``/api``, ``/apis`` and
each group/version document, kept for ``ttl_s`` (a CRD added to the cluster shows up within
that), and a group/version whose document fails keeps its last known resources, so a
discovery blink never makes watched types vanish.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from shared.kube.api import KubeClient
from shared.kube.errors import KubeError
from shared.model.resources import ApiResource, Catalog

#: How long a discovery snapshot is used before it is read again (the upstream operator
#: refreshes its catalog every 30 s, facts/upstream-gitops-reverser.md §1.2).
DEFAULT_TTL_S = 30.0


def _resources(group: str, version: str, document: Any) -> list[ApiResource]:
    found = []
    for entry in document.get("resources") or []:
        name = str(entry.get("name", ""))
        if not name or "/" in name:  # subresources are not types of their own
            continue
        found.append(
            ApiResource(
                group=group,
                version=version,
                resource=name,
                kind=str(entry.get("kind", "")),
                namespaced=bool(entry.get("namespaced")),
                verbs=frozenset(str(v) for v in entry.get("verbs") or []),
            )
        )
    return found


def _group_versions(client: KubeClient) -> dict[str, tuple[str, ...]]:
    versions: dict[str, tuple[str, ...]] = {"": tuple(client.request("get", "/api")["versions"])}
    for group in client.request("get", "/apis").get("groups") or []:
        served = [str(v["version"]) for v in group.get("versions") or []]
        preferred = str((group.get("preferredVersion") or {}).get("version") or "")
        if preferred in served:
            served.remove(preferred)
            served.insert(0, preferred)
        versions[str(group["name"])] = tuple(served)
    return versions


class Discovery:
    """A cached discovery snapshot of one cluster."""

    def __init__(
        self, client: KubeClient, clock: Callable[[], float], ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self._client = client
        self._clock = clock
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._read_at = 0.0

    def catalog(self) -> Catalog:
        """The snapshot, read again when older than the TTL; raises KubeError if never read."""
        with self._lock:
            now = self._clock()
            if self._catalog is None or now - self._read_at >= self._ttl_s:
                self._catalog = self._read(self._catalog)
                self._read_at = now
            return self._catalog

    def invalidate(self) -> None:
        """Read again on the next call (a type was not found, say)."""
        with self._lock:
            self._read_at = float("-inf")

    def _read(self, previous: Catalog | None) -> Catalog:
        versions = _group_versions(self._client)
        resources: list[ApiResource] = []
        for group, served in versions.items():
            for version in served:
                resources.extend(self._group_version(group, version, previous))
        return Catalog(versions, tuple(resources))

    def _group_version(
        self, group: str, version: str, previous: Catalog | None
    ) -> list[ApiResource]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            return _resources(group, version, self._client.request("get", path))
        except KubeError:
            return list(previous.in_group_version(group, version)) if previous else []
