"""Writing keys into a Secret: the one place the product creates or changes a Secret.

Used for a key the product generates for a user who asked for one (a GitTarget's
``spec.commit.signing.generateWhenMissing``), and for the install's own keys (the built-in
Redis's password, the SOPS fingerprint key): those are created in the cluster by whichever
process needs them first, never rendered by the chart, so a GitOps tool that renders the chart
again and again never changes them (docs/install.md "GitOps-safe"). Keys already in the
Secret are never replaced: a user's own key wins over one we would generate. The data is
base64-encoded here and goes only to the API server; it is never logged.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping

from shared.kube.api import KubeClient, Obj
from shared.kube.errors import Conflict, NotFound
from shared.kube.kinds import SECRETS

#: The field manager of our Secret writes.
FIELD_MANAGER = "gitops-reverser"
#: Writes tried by ``ensure_secret_key`` before it gives up: each lost race (409) means another
#: process wrote the key, so the next read finds it; more than a couple is a Secret in a loop.
ENSURE_ATTEMPTS = 3


def _encoded(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def add_secret_keys(
    client: KubeClient,
    namespace: str,
    name: str,
    data: Mapping[str, bytes],
    annotations: Mapping[str, str],
) -> None:
    """Create the Secret with ``data``, or add the keys it lacks to the one that exists (a
    key it already has is kept). A Secret changed meanwhile is a ``Conflict``: the caller
    reads it again on its next pass."""
    try:
        current = client.get(SECRETS, namespace, name)
    except NotFound:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
            "data": _encoded(data),
        }
        client.create(SECRETS, namespace, body)
        return
    held = dict(current.get("data") or {})
    missing = {k: v for k, v in data.items() if k not in held}
    if not missing:
        return
    meta = dict(current.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    current.pop("stringData", None)
    client.update(
        SECRETS,
        {**current, "metadata": meta, "data": {**held, **_encoded(missing)}},
        FIELD_MANAGER,
    )


def _held(client: KubeClient, namespace: str, name: str, key: str) -> bytes | None:
    try:
        data = client.get(SECRETS, namespace, name).get("data") or {}
    except NotFound:
        return None
    value = data.get(key)
    return base64.b64decode(value) if value else None


def ensure_secret_key(
    client: KubeClient,
    namespace: str,
    name: str,
    key: str,
    *,
    make: Callable[[], bytes],
    annotations: Mapping[str, str],
) -> bytes:
    """The value of ``key`` in Secret ``name``; written first with ``make()`` when absent.

    Create-if-absent, never replace: whichever process gets there first writes it, and one that
    loses the race (a 409 on create or update) reads the winner's value, so every process ends
    with the one value the Secret holds. A ``Conflict`` after ``ENSURE_ATTEMPTS`` lost races."""
    for _ in range(ENSURE_ATTEMPTS):
        held = _held(client, namespace, name, key)
        if held is not None:
            return held
        try:
            add_secret_keys(client, namespace, name, {key: make()}, annotations)
        except Conflict:
            continue
    held = _held(client, namespace, name, key)
    if held is None:
        raise Conflict(f"Secret {namespace}/{name} kept changing; key {key!r} not written", 409)
    return held
