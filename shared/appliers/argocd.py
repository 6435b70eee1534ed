"""The Argo CD applier: one Application (appliers.md A1).

Only its check is built: ApplierConfigured reads the Application and, once everything else
holds, asks whether we may get and update it. Asking it to sync is issue 10; until then every
request to an Application is refused with a message that says so.
"""

from __future__ import annotations

from shared.appliers.interface import Refused
from shared.appliers.reads import allowed, get_or_none
from shared.decide.applier_check import (
    ACCESS_DENIED,
    ArgoFound,
    Subject,
    argo_permissions,
    check_argo,
)
from shared.decide.conditions import Wanted
from shared.kube.api import KubeClient
from shared.kube.kinds import APPLICATIONS
from shared.model.requests import ApplyRequest

NOT_SUPPORTED = "Argo CD Applications are not supported yet"


class ArgoApplier:
    """``spec.applier.applicationRef``: an Argo CD Application with automated sync off."""

    kind = "Application"
    product = "Argo CD"

    def validate(self, client: KubeClient, subject: Subject, min_interval_s: float) -> Wanted:
        """S2: an Application fetches only when it syncs, so ``min_interval_s`` plays no part."""
        ref = subject.applier
        application = get_or_none(client, APPLICATIONS, ref.namespace, ref.name)
        verdict = check_argo(subject, ArgoFound(application, {}))
        if verdict.reason != ACCESS_DENIED:
            return verdict
        answers = allowed(client, argo_permissions(ref))
        return check_argo(subject, ArgoFound(application, answers))

    def read(self, client: KubeClient, request: ApplyRequest) -> Refused:
        """Not built yet (issue 10): refused before anything is read."""
        return Refused(NOT_SUPPORTED)
