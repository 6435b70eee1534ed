"""The appliers, one module per kind behind one interface (``interface.ApplierAdapter``).

``ADAPTERS`` is the adapters' half of the applier-kind table, keyed by the same kind as the
rules' half (``shared.model.appliers.KINDS``: spec field, product name, reasons owed, field
managers); a new kind is one module here plus one entry in each half, and
``tests/unit/appliers/test_kinds.py`` fails when one is missing. ``for_kind`` is the only
place that maps ``spec.applier``'s kind to its module, and the only place an unknown kind is
refused. The pure rules stay in ``shared.decide`` (``applier_check``, ``attempt``); the
modules here read and stamp through ``shared.kube`` and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from shared.appliers.argocd import ArgoApplier
from shared.appliers.flux import FluxApplier
from shared.appliers.interface import ApplierAdapter, Busy, Pending, Refused, Sent, Unneeded
from shared.appliers.webhook import WebhookApplier
from shared.model.appliers import ApplierKind

__all__ = [
    "ADAPTERS",
    "ApplierAdapter",
    "Busy",
    "Pending",
    "Refused",
    "Sent",
    "UnknownApplierKind",
    "Unneeded",
    "for_kind",
]

#: THE adapters of the applier kinds (the adapters' half of the table; see the docstring).
ADAPTERS: Mapping[ApplierKind, ApplierAdapter] = MappingProxyType(
    {
        "Kustomization": FluxApplier(),
        "Application": ArgoApplier(),
        "Webhook": WebhookApplier(time.time),
    }
)


class UnknownApplierKind(ValueError):
    """``spec.applier`` (or a request) names a kind no module handles."""


def for_kind(kind: str) -> ApplierAdapter:
    """The applier module for ``kind`` (``Kustomization``, ``Application``, ``Webhook``)."""
    try:
        return ADAPTERS[cast(ApplierKind, kind)]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS))
        raise UnknownApplierKind(f"no applier of kind {kind!r} (known: {known})") from None
