"""Reads every applier kind makes the same way: an object that may be absent, and access."""

from __future__ import annotations

from collections.abc import Iterable

from shared.decide.applier_check import Permission
from shared.kube.api import KubeClient, Obj
from shared.kube.errors import NotFound
from shared.model.resources import ApiResource


def get_or_none(client: KubeClient, res: ApiResource, namespace: str, name: str) -> Obj | None:
    """The object, or None when it does not exist (or no name was given): a missing applier
    object is a verdict (ApplierNotFound), not an error."""
    if not name:
        return None
    try:
        return client.get(res, namespace, name)
    except NotFound:
        return None


def allowed(client: KubeClient, needed: Iterable[Permission]) -> dict[Permission, bool]:
    """One SelfSubjectAccessReview per permission (S2, O4)."""
    return {p: client.ssar(p.verb, p.group, p.resource, p.namespace, p.name) for p in needed}
