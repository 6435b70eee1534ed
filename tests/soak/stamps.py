"""Every ``requestedAt`` stamp Flux's objects received during the soak, from a watch.

The dispatcher asks Flux by writing a new ``reconcile.fluxcd.io/requestedAt`` token on a
GitRepository or a Kustomization (../shared/facts/appliers.md F1: Flux acts on a change of
value). A background list+watch of both kinds in every namespace records each change of value
as one stamp, so "each token stamped at most once" is a count over what the API server really
received, not what the product says it did. The API server double runs in the soak's own
process and is never killed, so the watch resumes from its last resourceVersion after each
server-side timeout and misses nothing (a 410 relists, and a value first seen on a relist
still counts once per change).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from shared.kube.flux import REQUESTED_AT

#: (group, version, plural) of the two objects a Flux request stamps.
FLUX_KINDS = (
    ("source.toolkit.fluxcd.io", "v1", "gitrepositories"),
    ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
)
#: Server-side timeout of one watch request: the thread looks at its stop flag this often.
WATCH_TIMEOUT_S = 1
JOIN_S = 10.0


@dataclass(frozen=True, slots=True)
class Stamp:
    """One new value of an object's ``requestedAt``."""

    plural: str
    namespace: str
    name: str
    token: str
    seen_at: float  # time.time() when the watch delivered it


class StampLog:
    """Watches every GitRepository and Kustomization; ``stamps()`` lists each change of value."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str, str], str] = {}
        self._stamps: list[Stamp] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._follow, args=kind, daemon=True, name=f"stamps-{kind[2]}")
            for kind in FLUX_KINDS
        ]
        self.errors: list[str] = []

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(JOIN_S)

    def stamps(self) -> list[Stamp]:
        with self._lock:
            return list(self._stamps)

    def per_token(self) -> Counter[str]:
        """How many times each token was written as a new value, over every object."""
        return Counter(stamp.token for stamp in self.stamps())

    def _seen(self, plural: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata", {})
        value = (meta.get("annotations") or {}).get(REQUESTED_AT)
        key = (plural, str(meta.get("namespace")), str(meta.get("name")))
        with self._lock:
            if value and self._last.get(key) != value:
                self._stamps.append(Stamp(*key, str(value), time.time()))
            if value:
                self._last[key] = str(value)

    def _follow(self, group: str, version: str, plural: str) -> None:
        version_seen = ""
        while not self._stop.is_set():
            try:
                if not version_seen:
                    listed: dict[str, Any] = self._custom.list_cluster_custom_object(  # type: ignore[assignment]
                        group, version, plural
                    )
                    for item in listed.get("items", []):
                        self._seen(plural, item)
                    version_seen = str(listed["metadata"]["resourceVersion"])
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    self._custom.list_cluster_custom_object,
                    group,
                    version,
                    plural,
                    resource_version=version_seen,
                    timeout_seconds=WATCH_TIMEOUT_S,
                )
                for event in stream:
                    if event["type"] == "ERROR":
                        version_seen = ""  # 410 Gone: list again
                        break
                    obj = event["object"]
                    version_seen = str(obj["metadata"]["resourceVersion"])
                    if event["type"] != "BOOKMARK":
                        self._seen(plural, obj)
            except ApiException as err:
                if err.status == 410:
                    version_seen = ""
                    continue
                self.errors.append(f"{plural}: {err.status} {err.reason}")
                self._stop.wait(0.2)  # pacing a retry of a failed watch, not synchronisation
