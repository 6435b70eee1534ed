"""Writing keys into a Secret: the one place the product creates or changes a Secret.

Used for a key the product generates for a user who asked for one (a GitTarget's
``spec.commit.signing.generateWhenMissing``). Only a Secret the product created, and marked
when it did, is ever changed: one that exists without the mark (a TLS Secret, a controller's)
is refused with ``NotMarked`` and left as it is, so whoever may write a GitTarget cannot make
the product write into a Secret they could not write themselves (the 2026-12-06 probe, N11).
Keys already in the Secret are never replaced: a user's own key wins over one we would
generate. The data is base64-encoded here and goes only to the API server; it is never logged.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping

from shared.kube.api import KubeClient, Obj
from shared.kube.errors import NotFound
from shared.kube.kinds import SECRETS

#: The field manager of our Secret writes.
FIELD_MANAGER = "gitops-reverser"


class NotMarked(Exception):
    """The Secret exists and lacks the marks of one the product created: it is not changed."""


def _encoded(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def add_secret_keys(
    client: KubeClient,
    namespace: str,
    name: str,
    make: Callable[[], Mapping[str, bytes]],
    marks: Mapping[str, str],
) -> bool:
    """Create the Secret with the data ``make`` gives and the annotations ``marks``, or add
    the keys it lacks to the one that exists, only if it carries every mark (``NotMarked``
    otherwise, before anything is made or written); a key it already has is kept. True when
    the data made was written (False: the Secret had every key already). A Secret changed
    meanwhile is a ``Conflict``: the caller reads it again on its next pass."""
    try:
        current = client.get(SECRETS, namespace, name)
    except NotFound:
        data = make()
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(marks)},
            "data": _encoded(data),
        }
        client.create(SECRETS, namespace, body)
        return True
    meta = dict(current.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    if any(annotations.get(k) != v for k, v in marks.items()):
        raise NotMarked(f"Secret {namespace}/{name} was not created by gitops-reverser")
    held = dict(current.get("data") or {})
    missing = {k: v for k, v in make().items() if k not in held}
    if not missing:
        return False
    current.pop("stringData", None)
    client.update(
        SECRETS,
        {**current, "metadata": meta, "data": {**held, **_encoded(missing)}},
        FIELD_MANAGER,
    )
    return True
