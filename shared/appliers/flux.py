"""The Flux applier: a Kustomization and the GitRepository it reads (appliers.md F1-F3).

Both the check (S2) and an attempt (D4) read the same two objects the same way (``_read``)
and judge the source by the same rule (``shared.decide.applier_check.source_problem``). A
request stamps the GitRepository when its artifact lacks the commit, else the Kustomization
for a Refusal, never both (``shared.decide.attempt.flux_plan``); it is handled once the
Kustomization shows it (``flux_handled``, D6): for a source stamp, the end of a reconcile of the
commit's revision, or of the artifact the source fetched after the stamp
(``holding_revision``), which an outside push may have made newer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared.appliers.interface import Refused, Sent, Unneeded
from shared.appliers.reads import allowed, get_or_none
from shared.decide.applier_check import (
    ACCESS_DENIED,
    APPLIER_NOT_FOUND,
    FluxFound,
    Subject,
    check_flux,
    flux_permissions,
    source_problem,
    source_ref,
)
from shared.decide.attempt import Plan, SourceView, flux_handled, flux_plan, holding_revision
from shared.decide.conditions import Wanted
from shared.kube.api import KubeClient, Obj
from shared.kube.flux import GIT_REPOSITORIES, KUSTOMIZATIONS, request_reconcile
from shared.model.appliers import KINDS, ApplierKind, Reason
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest


def _field(obj: Obj, *path: str) -> str:
    """A nested string field, "" when any step is missing."""
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _ready(obj: Obj) -> str:
    """The status of the ``Ready`` condition ("" when there is none)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return str(condition.get("status") or "")
    return ""


def _read(client: KubeClient, ref: ApplierRef) -> FluxFound:
    """The Kustomization and, when it reads a GitRepository, that GitRepository."""
    kustomization = get_or_none(client, KUSTOMIZATIONS, ref.namespace, ref.name)
    if kustomization is None:
        return FluxFound(None, None, {})
    source = source_ref(kustomization)
    repository = None
    if source.kind == "GitRepository":
        repository = get_or_none(client, GIT_REPOSITORIES, source.namespace, source.name)
    return FluxFound(kustomization, repository, {})


def _source_view(repository: Obj) -> SourceView:
    """What D6 reads of the GitRepository (``holding_revision``)."""
    generation = _field(repository, "metadata", "generation")
    observed = _field(repository, "status", "observedGeneration")
    suspended = bool((repository.get("spec") or {}).get("suspend"))
    return SourceView(
        handled_at=_field(repository, "status", "lastHandledReconcileAt"),
        revision=_field(repository, "status", "artifact", "revision"),
        ready=_ready(repository),
        current=not suspended and generation != "" and observed == generation,
    )


@dataclass(slots=True)
class FluxSent:
    """A stamped request: handled once the Kustomization shows it (D6)."""

    client: KubeClient
    applier: ApplierRef
    stamp: Plan
    token: str
    commit: str
    #: The GitRepository (namespace, name) a source stamp went to.
    source: tuple[str, str] = ("", "")
    #: A read of this attempt proved the source fetched after our stamp (``holding_revision``).
    fetched: bool = False
    #: The revision whose apply finished a source stamp, once ``handled`` said so.
    applied: str = ""

    @property
    def plan(self) -> str:
        """What was stamped, and once a source stamp is handled the revision Flux applied
        (an outside push can make it newer than the commit asked for)."""
        return f"{self.stamp}; applied {self.applied}" if self.applied else self.stamp

    def handled(self) -> bool:
        """Read the GitRepository (for a source stamp) and the Kustomization again; ask D6."""
        holding = ""
        if self.stamp == "stamp-source":
            repository = self.client.get(GIT_REPOSITORIES, *self.source)
            holding = holding_revision(self.token, _source_view(repository), fetched=self.fetched)
            self.fetched = self.fetched or holding != ""
        kustomization = self.client.get(KUSTOMIZATIONS, self.applier.namespace, self.applier.name)
        attempted = _field(kustomization, "status", "lastAttemptedRevision")
        done = flux_handled(
            self.stamp,
            self.token,
            self.commit,
            _field(kustomization, "status", "lastHandledReconcileAt"),
            attempted,
            ready=_ready(kustomization),
            holding=holding,
        )
        if done and self.stamp == "stamp-source":
            self.applied = attempted
        return done


@dataclass(frozen=True, slots=True)
class FluxPending:
    """A Kustomization and a GitRepository that follows our branch, read just now."""

    client: KubeClient
    applier: ApplierRef
    kustomization: Obj
    repository: Obj
    commit: str

    def request(self, reasons: Iterable[Reason], token: str) -> Sent | Unneeded:
        """D4: stamp the GitRepository or the Kustomization (never both), or nothing."""
        revision = _field(self.repository, "status", "artifact", "revision")
        plan = flux_plan(reasons, revision, self.commit)
        if plan == "nothing":
            return Unneeded("the artifact already holds the commit")
        stamped = self.repository if plan == "stamp-source" else self.kustomization
        resource = GIT_REPOSITORIES if plan == "stamp-source" else KUSTOMIZATIONS
        meta = stamped["metadata"]
        request_reconcile(self.client, resource, meta["namespace"], meta["name"], token)
        source = self.repository["metadata"]
        return FluxSent(
            self.client,
            self.applier,
            plan,
            token,
            self.commit,
            (str(source["namespace"]), str(source["name"])),
        )


class FluxApplier:
    """``spec.applier.kustomizationRef``: Flux's kustomize- and source-controller."""

    kind: ApplierKind = "Kustomization"
    product = KINDS[kind].product

    def validate(self, client: KubeClient, subject: Subject, min_interval_s: float) -> Wanted:
        """S2: a configuration problem comes first; access is asked only when none is left."""
        found = _read(client, subject.applier)
        verdict = check_flux(subject, found, min_interval_s)
        if verdict.reason != ACCESS_DENIED or found.kustomization is None:
            return verdict
        needed = flux_permissions(subject.applier, source_ref(found.kustomization))
        answers = dataclasses.replace(found, allowed=allowed(client, needed))
        return check_flux(subject, answers, min_interval_s)

    def read(self, client: KubeClient, request: ApplyRequest) -> FluxPending | Refused:
        """The pair for one attempt, refused by the same source rule as ApplierConfigured."""
        ref = request.applier
        found = _read(client, ref)
        if found.kustomization is None:
            return Refused(
                f"{APPLIER_NOT_FOUND}: Kustomization {ref.namespace}/{ref.name} not found"
            )
        source = source_ref(found.kustomization)
        problem = source_problem(source, found.source, request.url, request.branch)
        if problem is None and found.source is not None:  # no problem: the source was found
            return FluxPending(
                client, ref, dict(found.kustomization), dict(found.source), request.commit
            )
        return Refused(str(problem))
