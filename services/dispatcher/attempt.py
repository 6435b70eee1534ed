"""One apply attempt: read everything again, ask Flux once, wait until it finished (D2-D4, D6).

The attempt never retries and never asks for something weaker than it was told: a reason no
GitTarget still holds is dropped (NothingToAsk when none is left); a moved tip or a pending
write means nothing is stamped (Stale); Flux is asked through one object, never both (D4);
Delivered only once Flux handled the request (D6), else Failed after the deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.dispatcher.facts import target_facts
from shared.decide.attempt import Plan, flux_handled, flux_plan, holders, stale
from shared.decide.obligations import Reason
from shared.git.errors import GitError
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError, NotFound
from shared.kube.flux import FluxClient
from shared.model.ids import normalise_url
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.branch_state import BranchState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ports:
    """What an attempt talks to, injected so each rule is testable without waiting."""

    reader: CrdReader
    flux_for: Callable[[str], FluxClient]
    tip: Callable[[ApplyRequest], str | None]
    branch_state: Callable[[str], BranchState]
    stamped: Callable[[ApplyRequest, dict[Reason, list[str]], str], None]
    clock: Callable[[], float]
    pause: Callable[[float], None]
    handled_timeout_s: float = 300.0
    poll_s: float = 1.0


def run(request: ApplyRequest, ports: Ports) -> AttemptOutcome:
    """Make the attempt and return its one outcome."""
    held = holders(request.reasons, target_facts(request, ports.reader))
    if not held.kept:
        return _outcome(
            request, "NothingToAsk", "no GitTarget still holds a reason", held.dropped, ports
        )
    if request.applier.kind != "Kustomization":
        return _outcome(
            request, "Failed", "Argo CD Applications are not supported yet", held.dropped, ports
        )
    try:
        return _flux(request, held.kept, held.dropped, ports)
    except (KubeError, GitError) as err:  # the cluster, or the remote's tip, could not be read
        return _outcome(request, "Failed", str(err), held.dropped, ports)


def _flux(
    request: ApplyRequest, reasons: dict[Reason, list[str]], dropped: list[Reason], ports: Ports
) -> AttemptOutcome:
    flux = ports.flux_for(request.applier.cluster_provider)
    try:
        kustomization = flux.kustomization(request.applier.namespace, request.applier.name)
        source = flux.source(kustomization)
    except NotFound as err:
        return _outcome(request, "Failed", f"ApplierNotFound: {err}", dropped, ports)
    mismatch = _source_mismatch(source, request)
    if mismatch:
        return _outcome(request, "Failed", f"SourceMismatch: {mismatch}", dropped, ports)
    state = ports.branch_state(request.branch_key)
    why = stale(
        request.commit,
        ports.tip(request),
        state.pending_total,
        state.windows_open,
        state.push_in_flight,
    )
    if why:
        return _outcome(request, "Stale", why, dropped, ports)
    revision = str(source.get("status", {}).get("artifact", {}).get("revision", ""))
    plan = flux_plan(reasons, revision, request.commit)
    if plan == "nothing":
        return _outcome(
            request, "Delivered", "the artifact already holds the commit", dropped, ports
        )
    flux.stamp(source if plan == "stamp-source" else kustomization, request.token)
    ports.stamped(request, reasons, plan)
    return _wait_handled(request, plan, dropped, flux, ports)


def _source_mismatch(source: dict[str, Any], request: ApplyRequest) -> str:
    spec: dict[str, Any] = source.get("spec") or {}
    ref: dict[str, Any] = spec.get("ref") or {}
    url = str(spec.get("url", ""))
    branch_ok = (
        ref.get("branch") == request.branch or ref.get("name") == f"refs/heads/{request.branch}"
    )
    if normalise_url(url) != normalise_url(request.url) or not branch_ok:
        followed = ref.get("branch") or ref.get("name") or "master"
        return f"GitRepository follows {url} {followed}, not {request.url} {request.branch}"
    return ""


def _wait_handled(
    request: ApplyRequest, plan: Plan, dropped: list[Reason], flux: FluxClient, ports: Ports
) -> AttemptOutcome:
    deadline = ports.clock() + ports.handled_timeout_s
    while True:
        status = flux.kustomization(request.applier.namespace, request.applier.name).get(
            "status", {}
        )
        if flux_handled(
            plan,
            request.token,
            request.commit,
            str(status.get("lastHandledReconcileAt", "")),
            str(status.get("lastAttemptedRevision", "")),
        ):
            return _outcome(
                request, "Delivered", f"Flux handled the request ({plan})", dropped, ports
            )
        if ports.clock() >= deadline:
            return _outcome(
                request, "Failed", "timeout: Flux did not handle the request", dropped, ports
            )
        ports.pause(ports.poll_s)


def _outcome(
    request: ApplyRequest, outcome: str, message: str, dropped: list[Reason], ports: Ports
) -> AttemptOutcome:
    log.info(
        "attempt %s: %s (%s)",
        request.token,
        outcome,
        message,
        extra={"token": request.token, "outcome": outcome, "branch": request.branch_key},
    )
    return AttemptOutcome(request.token, outcome, message, dropped, ports.clock())  # type: ignore[arg-type]
