"""The install's own keys, made once in the cluster: the built-in Redis's password and the SOPS
fingerprint key.

The chart renders neither (a GitOps tool renders it again and again, and a random value would
change on every sync: docs/install.md "GitOps-safe"); the process that needs one first creates
its Secret. Create-if-absent, never update: a Secret that exists is read, whoever made it, and
a key is never replaced, so no restart, upgrade or sync rotates it. The data goes only to the
API server; it is never logged.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping

from shared.kube.api import KubeClient, Obj
from shared.kube.errors import Conflict, NotFound
from shared.kube.kinds import SECRETS

#: Creates tried before giving up: a lost race (409) means another process created the Secret,
#: so the next read finds it; a 409 after which the key is still missing is a Secret of that
#: name without the key, which is not ours to change.
ENSURE_ATTEMPTS = 3


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
    """The value of ``key`` in Secret ``name``, which is created first with ``make()`` when
    it does not exist.

    Whichever process gets there first creates it; one that loses the race (a 409 on create)
    reads the winner's value, so every process ends with the one value the Secret holds. A
    ``Conflict`` when the Secret exists without ``key`` (it is left as it is)."""
    for _ in range(ENSURE_ATTEMPTS):
        held = _held(client, namespace, name, key)
        if held is not None:
            return held
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
            "data": {key: base64.b64encode(make()).decode()},
        }
        try:
            client.create(SECRETS, namespace, body)
        except Conflict:
            continue
    held = _held(client, namespace, name, key)
    if held is None:
        raise Conflict(f"Secret {namespace}/{name} exists without the key {key!r}", 409)
    return held
