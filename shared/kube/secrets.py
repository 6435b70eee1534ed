"""Writing keys into a Secret: the one place the product creates or changes a Secret.

Used for a key the product generates for a user who asked for one (a GitTarget's
``spec.commit.signing.generateWhenMissing``). Keys already in the Secret are never replaced: a
user's own key wins over one we would generate. The data is base64-encoded here and goes only
to the API server; it is never logged.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from shared.kube.api import KubeClient, Obj
from shared.kube.errors import NotFound
from shared.kube.kinds import SECRETS

#: The field manager of our Secret writes.
FIELD_MANAGER = "gitops-reverser"


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
