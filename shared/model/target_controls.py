"""A GitTarget's controls a person turns by hand: suspend, a reconcile request (P7, P8, P10).

``spec.suspend`` stops the GitTarget's writes while its watches keep collecting; the annotation
``reconcile.gitopsreverser.io/requestedAt`` asks for a full resync of its folder from the
cluster, and ``status.lastHandledReconcileAt`` answers with the value handled (the Flux
convention, so a person or a CLI sets the annotation to the time and waits for the answer to
equal it). ``status.remote`` is read back so it is written only when it changes.

These are parsed apart from ``shared.model.crds`` so that the GitTarget view gains one field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

#: The annotation that asks for a full resync (upstream's, on our group).
RECONCILE_ANNOTATION = "reconcile.gitopsreverser.io/requestedAt"
#: The longest value handled: ``status.lastHandledReconcileAt``'s ``maxLength`` in the CRD.
MAX_RECONCILE_VALUE = 1024
#: The ``status`` field that records the value handled.
LAST_HANDLED_FIELD = "lastHandledReconcileAt"

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TargetControls:
    """``spec.suspend``, the reconcile request and what status last showed of both."""

    suspended: bool = False
    #: The annotation's value; "" when there is none.
    reconcile_requested: str = ""
    #: ``status.lastHandledReconcileAt`` as stored.
    reconcile_handled: str = ""
    #: ``status.remote`` as stored (P10), to write it only when it changes.
    remote: Raw | None = field(default=None, compare=False)

    @property
    def reconcile_problem(self) -> str:
        """Why the reconcile request cannot be handled ("" when it can, or there is none)."""
        if len(self.reconcile_requested) > MAX_RECONCILE_VALUE:
            return (
                f"the annotation {RECONCILE_ANNOTATION} is longer than {MAX_RECONCILE_VALUE} "
                "characters; set it to a shorter value (a time, say) to ask for a resync"
            )
        return ""

    @property
    def resync(self) -> str:
        """The request the GitTarget's watches should have handled ("" for none): the
        annotation's value, while it can be handled."""
        return "" if self.reconcile_problem else self.reconcile_requested

    @property
    def reconcile_due(self) -> bool:
        """A request is standing that status does not show handled yet."""
        return bool(self.resync) and self.resync != self.reconcile_handled


def _map(value: Any) -> Raw:
    return cast(Raw, value) if isinstance(value, Mapping) else {}


def parse_controls(raw: Raw) -> TargetControls:
    """The controls of a GitTarget as the API returned it (absent fields: not suspended, no
    request, nothing handled)."""
    spec, status = _map(raw.get("spec")), _map(raw.get("status"))
    annotations = _map(_map(raw.get("metadata")).get("annotations"))
    remote = status.get("remote")
    return TargetControls(
        suspended=spec.get("suspend") is True,
        reconcile_requested=str(annotations.get(RECONCILE_ANNOTATION) or ""),
        reconcile_handled=str(status.get(LAST_HANDLED_FIELD) or ""),
        remote=cast(Raw, remote) if isinstance(remote, Mapping) else None,
    )
