"""The appliers, one module per kind behind one interface (``interface.ApplierAdapter``).

``for_kind`` is the only place that maps ``spec.applier``'s kind to its module, and the only
place an unknown kind is refused. The pure rules stay in ``shared.decide`` (``applier_check``,
``attempt``); the modules here read and stamp through ``shared.kube`` and nothing else.
"""

from __future__ import annotations

import time

from shared.appliers.argocd import ArgoApplier
from shared.appliers.flux import FluxApplier
from shared.appliers.interface import ApplierAdapter, Busy, Pending, Refused, Sent, Unneeded
from shared.appliers.webhook import WebhookApplier

__all__ = [
    "ApplierAdapter",
    "Busy",
    "Pending",
    "Refused",
    "Sent",
    "UnknownApplierKind",
    "Unneeded",
    "for_kind",
]

_APPLIERS: tuple[ApplierAdapter, ...] = (FluxApplier(), ArgoApplier(), WebhookApplier(time.time))
_BY_KIND: dict[str, ApplierAdapter] = {a.kind: a for a in _APPLIERS}


class UnknownApplierKind(ValueError):
    """``spec.applier`` (or a request) names a kind no module handles."""


def for_kind(kind: str) -> ApplierAdapter:
    """The applier module for ``kind`` (``Kustomization``, ``Application``, ``Webhook``)."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        known = ", ".join(sorted(_BY_KIND))
        raise UnknownApplierKind(f"no applier of kind {kind!r} (known: {known})") from None
