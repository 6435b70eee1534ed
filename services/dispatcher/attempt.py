"""One apply attempt: read everything again, ask the applier once, wait until it finished.

D2-D6. The attempt never retries and never asks for something weaker than it was told: a
reason no GitTarget still holds is dropped (NothingToAsk when none is left); the applier's own
module (``shared.appliers.for_kind``) reads its objects and may refuse (Failed) or find them
busy (an Argo CD operation running, D5: read again after a pause; a 409 on our write: read
again at once, a bounded number of times); a moved tip or a pending write means nothing is
stamped (Stale, D3, checked here for every kind alike between each read and the stamp); the
module stamps one object, never two (D4); Delivered only once the applier handled the request
(D6), else Failed at the deadline, which the wait for a busy applier shares.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from services.dispatcher.facts import target_facts
from shared.appliers import (
    ApplierAdapter,
    Busy,
    Refused,
    Sent,
    UnknownApplierKind,
    Unneeded,
    for_kind,
)
from shared.decide.attempt import WATCH_WAIT_S, after_behind, after_busy, holders
from shared.decide.quiet import stale_reason, unmirrored_reason
from shared.git.errors import GitError
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.model.appliers import Reason
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.branch_state import BranchState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ports:
    """What an attempt talks to, injected so each rule is testable without waiting."""

    reader: CrdReader
    cluster_for: Callable[[str], KubeClient]  # the applier's cluster, by ClusterProvider name
    tip: Callable[[ApplyRequest], str | None]
    branch_state: Callable[[str], BranchState]
    stamped: Callable[[ApplyRequest, dict[Reason, list[str]], str], None]
    clock: Callable[[], float]
    pause: Callable[[float], None]
    handled_timeout_s: float = 300.0
    poll_s: float = 1.0
    #: The objects the watches feeding the branch have not published yet (D3, issue 11;
    #: ``services.dispatcher.mirrored.behind``); tests that run no watcher leave it empty.
    behind: Callable[[ApplyRequest], list[str]] = lambda _request: []
    #: How long the attempt waits for those watches before it is Stale (``after_behind``).
    watch_wait_s: float = WATCH_WAIT_S


@dataclass(frozen=True, slots=True)
class Behind:
    """The watches feeding the branch have not published what the API lists (D3): read
    again after a pause rather than Stale at once (``after_behind``)."""

    message: str


def run(request: ApplyRequest, ports: Ports) -> AttemptOutcome:
    """Make the attempt and return its one outcome."""
    held = holders(request.reasons, target_facts(request, ports.reader))
    if not held.kept:
        return _outcome(
            request, "NothingToAsk", "no GitTarget still holds a reason", held.dropped, ports
        )
    try:
        applier = for_kind(request.applier.kind)
        return _ask(applier, request, held.kept, held.dropped, ports)
    except UnknownApplierKind as err:
        return _outcome(request, "Failed", str(err), held.dropped, ports)
    except (KubeError, GitError) as err:  # the cluster, or the remote's tip, could not be read
        return _outcome(request, "Failed", str(err), held.dropped, ports)


def _ask(
    applier: ApplierAdapter,
    request: ApplyRequest,
    reasons: dict[Reason, list[str]],
    dropped: list[Reason],
    ports: Ports,
) -> AttemptOutcome:
    cluster = ports.cluster_for(request.applier.cluster_provider)
    deadline = ports.clock() + ports.handled_timeout_s
    conflicts = 0
    behind_since: float | None = None
    while True:
        asked = _read_and_request(applier, cluster, request, reasons, dropped=dropped, ports=ports)
        if isinstance(asked, Behind):
            now = ports.clock()
            behind_since = now if behind_since is None else behind_since
            if after_behind(behind_since, now, ports.watch_wait_s, deadline) == "stale":
                return _outcome(request, "Stale", asked.message, dropped, ports)
            ports.pause(ports.poll_s)
            continue
        if not isinstance(asked, Busy):
            break
        conflicts += asked.conflict
        step = after_busy(asked.conflict, conflicts, ports.clock(), deadline)
        if step == "give-up":
            why = f"conflict {conflicts} times" if asked.conflict else "timeout"
            return _outcome(request, "Failed", f"{why}: {asked.message}", dropped, ports)
        if step == "pause":
            ports.pause(ports.poll_s)
    if isinstance(asked, AttemptOutcome):
        return asked
    if isinstance(asked, Unneeded):
        return _outcome(request, "Delivered", asked.message, dropped, ports)
    ports.stamped(request, reasons, asked.plan)
    return _wait_handled(
        request, applier.product, asked, dropped=dropped, deadline=deadline, ports=ports
    )


def _read_and_request(
    applier: ApplierAdapter,
    cluster: KubeClient,
    request: ApplyRequest,
    reasons: dict[Reason, list[str]],
    *,
    dropped: list[Reason],
    ports: Ports,
) -> AttemptOutcome | Behind | Busy | Sent | Unneeded:
    """Read the applier, check the branch (D3) and ask: one pass, read again when Busy or
    Behind."""
    pending = applier.read(cluster, request)
    if isinstance(pending, Refused):
        return _outcome(request, "Failed", pending.message, dropped, ports)
    if isinstance(pending, Busy):
        return pending
    # In this order: what the API holds against what the watches published, then what the
    # branch has not pushed of it, then the tip. An edit after the list is the apply window's.
    behind = unmirrored_reason(ports.behind(request))
    if behind:
        return Behind(behind)
    state = ports.branch_state(request.branch_key)
    why = stale_reason(request.commit, ports.tip(request), state.view())
    if why:
        return _outcome(request, "Stale", why, dropped, ports)
    asked = pending.request(reasons, request.token)
    if isinstance(asked, Refused):  # the applier turned the request down (a webhook's non-2xx)
        return _outcome(request, "Failed", asked.message, dropped, ports)
    return asked


def _wait_handled(
    request: ApplyRequest,
    product: str,
    sent: Sent,
    *,
    dropped: list[Reason],
    deadline: float,
    ports: Ports,
) -> AttemptOutcome:
    while True:
        if sent.handled():
            return _outcome(
                request, "Delivered", f"{product} handled the request ({sent.plan})", dropped, ports
            )
        if ports.clock() >= deadline:
            return _outcome(
                request, "Failed", f"timeout: {product} did not handle the request", dropped, ports
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
