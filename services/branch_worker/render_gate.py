"""The render-fidelity gate as the writer applies it to one event (issue 27 item 8).

``RenderContext`` is what the branch's owner knows of a GitTarget's applier render: None when
the applier substitutes nothing (no Flux Kustomization, or one without ``spec.postBuild``; the
gate is off), the variables when it does, and a ``Mismatch`` when they cannot be known (a
``substituteFrom`` source missing, a variable defined twice): then every write of the folder
is refused, since none can be shown to render as the live object. ``Gate`` holds the live
object of one event and decides with ``shared.model.render_fidelity``. The fields a rule's
``ignoreDifferences`` names (``ObjectEvent.ignored``) hold Git's value in the event the writer
gates (``kept_values``), so the gate leaves them out: they never make it refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.branch_worker.folder import IdentityKey
from shared import kustomize
from shared.model.events import ObjectEvent
from shared.model.manifest import render as render_text
from shared.model.render_fidelity import Mismatch, keep_variables, render_matches

RenderContext = Mapping[str, str] | Mismatch | None


@dataclass(frozen=True, slots=True)
class Gate:
    """One write's check: its live object, the variables, and how a message names it."""

    values: Mapping[str, str]
    live: dict[str, Any]
    label: str
    #: Set when the variables could not be read: the write is refused with it.
    refused: Mismatch | None = None
    #: JSON pointers of the fields the rule's ignoreDifferences names: not compared.
    ignored: tuple[str, ...] = ()

    @classmethod
    def of(cls, render: RenderContext, event: ObjectEvent) -> Gate | None:
        """The gate of ``event`` (None: nothing to check, a delete or no substitutions)."""
        if render is None or event.operation == "DELETE" or event.body is None:
            return None
        oid = event.object_id
        label = f"{oid.kind} {oid.namespace}/{oid.name}".replace(" /", " ")
        if isinstance(render, Mismatch):
            return cls({}, event.body, label, Mismatch(f"{label}: {render.message}", render.reason))
        return cls(render, event.body, label, ignored=event.ignored)

    def keep(self, in_git: Mapping[str, Any]) -> dict[str, Any] | Mismatch:
        """The object to write: live, with Git's variables kept where they still hold."""
        if self.refused is not None:
            return self.refused
        return keep_variables(in_git, self.live, self.values, self.label, self.ignored)

    def check(self, data: bytes) -> Mismatch | None:
        """None when the file about to be written renders to the live object."""
        if self.refused is not None:
            return self.refused
        return render_matches(data, self.live, self.values, self.label, self.ignored)


def renders_as(held: dict[str, Any], event: ObjectEvent, render: RenderContext) -> bool:
    """Whether Git's document, rendered with the applier's postBuild variables, is the
    event's object (so the write the gate would make keeps it as it is)."""
    gate = Gate.of(render, event)
    return gate is not None and gate.refused is None and gate.keep(held) == held


def kept_variables(
    gate: Gate | None, tree: kustomize.Tree, key: IdentityKey, body: dict[str, Any] | None
) -> dict[str, Any] | None:
    """``body`` with the variables of the folder's render of the object kept (the gate);
    ``kustomize.Refused`` with the gate's reason when the live value contradicts one."""
    if gate is None or body is None:
        return body
    held = tree.find(key)
    kept = gate.keep(held.obj) if held is not None else body
    if isinstance(kept, Mismatch):
        raise kustomize.Refused(kept.reason, kept.message)
    return kept


def rendered_check(
    gate: Gate | None, after: kustomize.Tree, key: IdentityKey, body: dict[str, Any] | None
) -> None:
    """The gate on a kustomize folder's render of the object (what Flux substitutes in):
    ``kustomize.Refused`` with the gate's reason when it does not hold."""
    if gate is None or body is None:
        return
    found = after.find(key)
    mismatch = gate.check(render_text(found.obj) if found is not None else b"")
    if mismatch is not None:
        raise kustomize.Refused(mismatch.reason, mismatch.message)
