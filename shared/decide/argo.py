"""The Argo CD request, decided purely (D5, D6; facts: appliers.md A2, A3).

The Argo CD applier (``shared.appliers.argocd``) reads an Application and writes it back; these
functions say what to write and what the Application's status means:

- ``running``: D5 never replaces an operation. One is in progress while ``operation`` is set
  (what Argo CD's own ``SetAppOperation`` refuses on) or ``status.operationState`` has not
  completed (``Running``, including a failed sync waiting for its retry, or ``Terminating``).
- ``sync_operation``: the operation automated sync would build (appliers.md A2 "How autoSync
  builds its operation"): ``sync.source`` a copy of ``spec.source``, ``sync.prune`` from
  ``syncPolicy.automated.prune`` (kept there with ``enabled: false``), ``sync.syncOptions`` and
  ``retry`` from ``syncPolicy`` (autosync's ``{limit: 5}`` without one), with ``sync.revision``
  pinned to the checked commit, ``retry.refresh`` left out (appliers.md A3: a refresh drops
  the pinned revision on retry), ``initiatedBy {username: gitops-reverser, automated: true}`` (an
  automated operation to sync windows, appliers.md A6) and the request's token in ``info``.
- ``with_operation``: the whole Application as ``SetAppOperation`` writes it: the operation
  set and ``status.operationState`` cleared (the CRD has no status subresource, appliers.md
  A1), its ``metadata.resourceVersion`` kept so that the update fails with 409 if it changed.
- ``already_attempted``: the one case nothing is asked (``Unneeded``): a request without a
  Refusal at a commit whose sync this Application already finished. Automated sync skips such
  a revision too (appliers.md A2 ``alreadyAttemptedSync``). It is the Flux rule's analogue
  (D4: a ForeignCommit whose artifact holds the commit is not stamped). A Refusal is always asked:
  it reverts drift at an unchanged commit, which only a new sync does. ``status.sync`` is not
  used: it is only as fresh as the last comparison (appliers.md A4).
- ``finished_phase``: D6, the phase our operation ended in (``Succeeded``, ``Failed``,
  ``Error``), found by the token in ``status.operationState.operation.info``; ``Running`` with
  ``finishedAt`` is a retry wait, not a finish (appliers.md A3).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, cast

from shared.model.appliers import Reason

Raw = Mapping[str, Any]
Obj = dict[str, Any]

#: ``operation.initiatedBy.username`` of every operation the product sets.
USERNAME = "gitops-reverser"
#: ``operation.info`` entries: the request's token (D6 finds our operation by it) and reasons.
TOKEN_INFO = "gitops-reverser/token"
REASONS_INFO = "gitops-reverser/reasons"
#: Phases of a completed operation (gitops-engine ``OperationPhase.Completed``, appliers.md A3).
FINISHED = ("Succeeded", "Failed", "Error")
#: Automated sync's retry when ``syncPolicy.retry`` is absent (appliers.md A2).
DEFAULT_RETRY: Raw = {"limit": 5}


def _map(value: Any) -> Raw:
    return cast(Raw, value) if isinstance(value, Mapping) else {}


def _state(application: Raw) -> Raw:
    return _map(_map(application.get("status")).get("operationState"))


def running(application: Raw) -> str | None:
    """D5: why the Application has an operation in progress (for people), or None."""
    state = _state(application)
    phase = str(state.get("phase", ""))
    if application.get("operation") is not None:
        initiator = _map(_map(application["operation"]).get("initiatedBy"))
        who = initiator.get("username") or ("automated" if initiator.get("automated") else "")
        return f"an operation is set{f' (by {who})' if who else ''}" + (
            f", phase {phase}" if phase else ", not started yet"
        )
    if state and phase not in FINISHED:
        message = str(state.get("message", ""))
        return f"an operation is {phase or 'in progress'}" + (f": {message}" if message else "")
    return None


def sync_operation(application: Raw, commit: str, token: str, reasons: Iterable[Reason]) -> Obj:
    """D5: the operation automated sync would build, pinned to ``commit``, carrying ``token``."""
    spec = _map(application.get("spec"))
    policy = _map(spec.get("syncPolicy"))
    sync: Obj = {
        "revision": commit,
        "source": copy.deepcopy(dict(_map(spec.get("source")))),
        "prune": _map(policy.get("automated")).get("prune") is True,
    }
    if policy.get("syncOptions"):
        sync["syncOptions"] = list(policy["syncOptions"])
    retry = {k: copy.deepcopy(v) for k, v in _map(policy.get("retry") or DEFAULT_RETRY).items()}
    retry.pop("refresh", None)
    return {
        "sync": sync,
        "initiatedBy": {"username": USERNAME, "automated": True},
        "info": [
            {"name": TOKEN_INFO, "value": token},
            {"name": REASONS_INFO, "value": "+".join(sorted(set(reasons)))},
        ],
        "retry": retry,
    }


def with_operation(application: Raw, operation: Raw) -> Obj:
    """The whole Application with ``operation`` set and ``status.operationState`` cleared,
    as ``SetAppOperation`` updates it (appliers.md A2); the resourceVersion read stays, as
    its guard."""
    updated = copy.deepcopy(dict(application))
    updated["operation"] = copy.deepcopy(dict(operation))
    status = dict(_map(updated.get("status")))
    status.pop("operationState", None)
    updated["status"] = status
    return updated


def _token_of(operation: Raw) -> str:
    for item in operation.get("info") or ():
        entry = _map(item)
        if entry.get("name") == TOKEN_INFO:
            return str(entry.get("value", ""))
    return ""


def already_attempted(application: Raw, commit: str, reasons: Iterable[Reason]) -> bool:
    """Nothing to ask: no Refusal, and the last operation synced ``commit`` and completed."""
    if "Refusal" in set(reasons):
        return False
    state = _state(application)
    result = _map(state.get("syncResult"))
    return state.get("phase") in FINISHED and result.get("revision") == commit


def synced_commit(application: Raw) -> str:
    """The commit the Application last synced successfully: its last operation's
    ``syncResult.revision`` when that operation Succeeded, else the newest ``status.history``
    entry (Argo CD records a successful sync there); "" when it records none. ``status.sync`` is
    not used: it is the last comparison, not what was applied (appliers.md A4)."""
    state = _state(application)
    revision = str(_map(state.get("syncResult")).get("revision", ""))
    if state.get("phase") == "Succeeded" and revision:
        return revision
    history = _map(application.get("status")).get("history")
    if isinstance(history, list) and history:
        return str(_map(history[-1]).get("revision", ""))
    return ""


def finished_phase(application: Raw, token: str) -> str | None:
    """D6: the phase our operation (``token`` in its info) completed in, or None."""
    state = _state(application)
    if _token_of(_map(state.get("operation"))) != token:
        return None
    phase = str(state.get("phase", ""))
    return phase if phase in FINISHED else None


def outcome_message(application: Raw, token: str) -> str:
    """What became of our operation, for the ledger: its phase and Argo CD's message."""
    state = _state(application)
    phase = finished_phase(application, token) or str(state.get("phase", "")) or "not started"
    revision = str(_map(state.get("syncResult")).get("revision", ""))
    message = str(state.get("message", ""))
    at = f" at {revision[:12]}" if revision else ""
    return f"sync {phase}{at}" + (f": {message}" if message else "")
