"""The Argo CD applier: one Application with automated sync off (appliers.md A1-A6).

The check (S2) and an attempt (D5) read the Application the same way and judge it by the same
rule (``shared.decide.argo_check.application_problem``: a single source on this repository
and branch, automated sync off), so an attempt never asks an Application ApplierConfigured
would stall.

What a request does (D5, D6; the pure rules are ``shared.decide.argo``):

1. Read the Application. An operation in progress (``operation`` set, or
   ``status.operationState`` not completed: a sync, a failed sync waiting for its retry, a sync
   window holding it) is never replaced: the attempt is ``Busy`` and the dispatcher reads
   again until its deadline, then fails saying which operation held it.
2. Set ``operation`` to the sync automated sync would build, pinned to the checked commit,
   ``initiatedBy {username: gitops-reverser, automated: true}``, the request's token in
   ``info``, ``retry`` from ``syncPolicy`` without ``refresh``; written as one update (PUT) of
   the whole Application guarded by the resourceVersion read, clearing
   ``status.operationState``, as Argo CD's ``SetAppOperation`` does. A 409 is ``Busy``
   (conflict): the dispatcher reads again and decides again, including the stale check (D3).
3. ``Delivered`` once ``status.operationState`` for our token (its ``operation.info``) reached
   ``Succeeded``, ``Failed`` or ``Error``; the phase and Argo CD's message go into the outcome.

Unneeded: a request without a Refusal at a commit whose sync the Application already finished
(``operationState.syncResult.revision``) asks nothing, as automated sync does not retry an
attempted revision and as Flux is not stamped for a commit its artifact holds. A Refusal always
syncs. The only verbs used on ``applications.argoproj.io`` are get and update.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.appliers.interface import Busy, Refused, Unneeded
from shared.appliers.reads import allowed, get_or_none
from shared.decide.applier_check import (
    ACCESS_DENIED,
    APPLIER_NOT_FOUND,
    Subject,
)
from shared.decide.argo import (
    already_attempted,
    finished_phase,
    outcome_message,
    running,
    sync_operation,
    with_operation,
)
from shared.decide.argo_check import (
    ArgoFound,
    application_problem,
    argo_permissions,
    check_argo,
)
from shared.decide.conditions import Wanted
from shared.kube.api import KubeClient, Obj
from shared.kube.errors import Conflict
from shared.kube.kinds import APPLICATIONS
from shared.model.appliers import KINDS, ApplierKind, Reason
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest

#: The field manager of our update (it must not start with ``kubectl``, appliers.md F1).
FIELD_MANAGER = "gitops-reverser"


@dataclass(slots=True)
class ArgoSent:
    """Our operation is set: handled once its operationState completed (D6)."""

    client: KubeClient
    applier: ApplierRef
    token: str
    commit: str
    outcome: str = field(default="")

    @property
    def plan(self) -> str:
        """``sync <commit>``, and once handled the phase it ended in."""
        asked = f"sync {self.commit[:12]}"
        return f"{asked}; {self.outcome}" if self.outcome else asked

    def handled(self) -> bool:
        """Read the Application again and ask D6."""
        application = self.client.get(APPLICATIONS, self.applier.namespace, self.applier.name)
        if finished_phase(application, self.token) is None:
            return False
        self.outcome = outcome_message(application, self.token)
        return True


@dataclass(frozen=True, slots=True)
class ArgoPending:
    """An Application that syncs our branch only when asked, with no operation running."""

    client: KubeClient
    applier: ApplierRef
    application: Obj
    commit: str

    def request(self, reasons: Iterable[Reason], token: str) -> ArgoSent | Unneeded | Busy:
        """D5: set our operation with one guarded update, or nothing."""
        asked = list(reasons)
        if already_attempted(self.application, self.commit, asked):
            return Unneeded(f"the Application already synced {self.commit[:12]}")
        operation = sync_operation(self.application, self.commit, token, asked)
        try:
            self.client.update(
                APPLICATIONS, with_operation(self.application, operation), FIELD_MANAGER
            )
        except Conflict as err:
            return Busy(f"the Application changed since it was read ({err})", conflict=True)
        return ArgoSent(self.client, self.applier, token, self.commit)


class ArgoApplier:
    """``spec.applier.applicationRef``: an Argo CD Application with automated sync off."""

    kind: ApplierKind = "Application"
    product = KINDS[kind].product

    def validate(self, client: KubeClient, subject: Subject, min_interval_s: float) -> Wanted:
        """S2: an Application fetches only when it syncs, so ``min_interval_s`` plays no part."""
        ref = subject.applier
        application = get_or_none(client, APPLICATIONS, ref.namespace, ref.name)
        verdict = check_argo(subject, ArgoFound(application, {}))
        if verdict.reason != ACCESS_DENIED:
            return verdict
        answers = allowed(client, argo_permissions(ref))
        return check_argo(subject, ArgoFound(application, answers))

    def read(self, client: KubeClient, request: ApplyRequest) -> ArgoPending | Refused | Busy:
        """The Application for one attempt: refused by the check's rule, busy while an
        operation runs (D5)."""
        ref = request.applier
        application = get_or_none(client, APPLICATIONS, ref.namespace, ref.name)
        if application is None:
            return Refused(f"{APPLIER_NOT_FOUND}: Application {ref.namespace}/{ref.name} not found")
        problem = application_problem(application, request.url, request.branch)
        if problem is not None:
            return Refused(str(problem))
        why = running(application)
        if why is not None:
            return Busy(f"Application {ref.namespace}/{ref.name}: {why}")
        return ArgoPending(client, ref, application, request.commit)
