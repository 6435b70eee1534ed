"""Which watch events wake which Flux object: the controllers' predicates, as pure functions.

Facts (../shared/facts/appliers.md):

- F1: GitRepository and Kustomization watches pass an update only when the generation changed
  (a spec edit) or the ``reconcile.fluxcd.io/requestedAt`` token is present and differs from
  the old object's (``GenerationChangedPredicate`` OR ``ReconcileRequestedPredicate``). Other
  metadata and status edits wake nothing. A created object always passes.
- F2 "What wakes Kustomizations": a source update wakes the Kustomizations that reference it
  when its artifact first appears or its revision changes (``SourceRevisionChangePredicate``),
  except those already Ready or Reconciling whose ``lastAttemptedRevision`` equals the new
  revision (``requestsForRevisionChangeOf``).

An ``ObjectView`` is the part of an object these rules read, kept per object as the
controllers' informer cache would keep it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from sandbox.flux import conditions
from sandbox.flux.activity import GIT_REPOSITORY, KUSTOMIZATION

REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"


class ObjectKey(NamedTuple):
    """A Flux object's identity: kind, namespace, name."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class ObjectView:
    """What the predicates need from one GitRepository or Kustomization."""

    key: ObjectKey
    generation: int
    token: str | None
    artifact_revision: str | None = None  # GitRepository: status.artifact.revision
    source: ObjectKey | None = None  # Kustomization: the GitRepository it reads
    last_attempted: str = ""  # Kustomization: status.lastAttemptedRevision
    ready_or_reconciling: bool = False  # Kustomization: Ready or Reconciling is True


def key_of(obj: dict[str, Any]) -> ObjectKey:
    """The identity of a raw object."""
    meta = obj.get("metadata", {})
    return ObjectKey(obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def token_of(obj: dict[str, Any]) -> str | None:
    """The object's reconcile-request token, if it has one."""
    annotations = obj.get("metadata", {}).get("annotations") or {}
    token = annotations.get(REQUESTED_AT)
    return token if isinstance(token, str) else None


def source_of(obj: dict[str, Any]) -> ObjectKey:
    """The source a Kustomization names; ``sourceRef.namespace`` defaults to its own."""
    ref = obj.get("spec", {}).get("sourceRef", {})
    namespace = ref.get("namespace") or obj.get("metadata", {}).get("namespace", "")
    return ObjectKey(ref.get("kind", ""), namespace, ref.get("name", ""))


def view_of(obj: dict[str, Any]) -> ObjectView:
    """The predicate-relevant view of a raw GitRepository or Kustomization."""
    key = key_of(obj)
    generation = int(obj.get("metadata", {}).get("generation", 0))
    status = obj.get("status") or {}
    if key.kind == GIT_REPOSITORY:
        artifact = status.get("artifact") or {}
        return ObjectView(key, generation, token_of(obj), artifact.get("revision"))
    conds = status.get("conditions") or []
    busy = conditions.is_true(conds, conditions.READY) or conditions.is_true(
        conds, conditions.RECONCILING
    )
    return ObjectView(
        key,
        generation,
        token_of(obj),
        source=source_of(obj),
        last_attempted=status.get("lastAttemptedRevision", ""),
        ready_or_reconciling=busy,
    )


def wakes(old: ObjectView | None, new: ObjectView) -> bool:
    """F1: a create, a new generation, or a new requestedAt token wakes the object."""
    if old is None:
        return True
    if new.generation != old.generation:
        return True
    return new.token is not None and new.token != old.token


def revision_changed(old: ObjectView | None, new: ObjectView) -> bool:
    """F2: the artifact appeared, or its revision is not the old one (plain string equality)."""
    if new.artifact_revision is None:
        return False
    return old is None or old.artifact_revision != new.artifact_revision


def revision_wakes(kustomization: ObjectView, revision: str) -> bool:
    """F2: a new source revision wakes a Kustomization unless it already attempted it."""
    if kustomization.key.kind != KUSTOMIZATION:
        return False
    return not (kustomization.ready_or_reconciling and kustomization.last_attempted == revision)
