"""The Application's ``operation`` and ``status.operationState``, as pure functions.

Facts (../shared/facts/appliers.md):

- A1: ``syncPolicy.automated`` is enabled when present and ``enabled`` is absent or true
  (``IsAutomatedSyncEnabled``); retry backoff defaults are duration 5s, factor 2, maxDuration
  3m; a duration is a Go duration string or a bare integer of seconds; ``limit`` 0 means no
  retries and a negative limit unlimited retries.
- A2 "How autoSync builds its operation": ``sync {source: copy of spec.source, revision:
  status.sync.revision, prune: automated.prune, syncOptions}``, ``initiatedBy {automated:
  true}``, ``retry``: ``syncPolicy.retry`` or else ``{limit: 5}``; nothing else is set. The
  selfHeal case adds ``autoHealAttemptsCount + 1`` and restricts ``sync.resources`` to the
  resources that are not Synced.
- A2 "How the controller consumes and clears it": ``NewOperationState`` is ``{phase: Running,
  operation: <copy>, startedAt: now}``.
- A3: phases; a failed attempt with retries left stays ``Running`` with ``finishedAt``,
  ``retryCount: n+1`` and the message ``"<error>. Retrying attempt #<n+1> at 3:04PM."``; the
  retry says ``"Retrying operation[ with latest revisions]. Attempt #n"``, and with
  ``retry.refresh: true`` drops ``sync.revision``/``revisions`` of the copy in
  ``operationState.operation``; after the last attempt the message ends
  ``" (retried N times)."``; the wait is ``duration x factor^retryCount`` capped at maxDuration.
- A6: ``initiatedBy.automated`` decides whether the operation counts as manual for windows.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from typing import Any

from sandbox.flux import durations
from sandbox.flux.conditions import timestamp as stamp

RUNNING, TERMINATING = "Running", "Terminating"
SUCCEEDED, FAILED, ERROR = "Succeeded", "Failed", "Error"
COMPLETED = (SUCCEEDED, FAILED, ERROR)
DEFAULT_RETRY = {"limit": 5}  # autoSync's retry when syncPolicy.retry is absent (A2)
BACKOFF_DURATION_S, BACKOFF_FACTOR, BACKOFF_MAX_S = 5.0, 2.0, 180.0  # A1 defaults
_SECONDS = re.compile(r"^[0-9]+$")


def automated_enabled(app: dict[str, Any]) -> bool:
    """``IsAutomatedSyncEnabled``: ``automated`` present and ``enabled`` absent or true."""
    automated = (app.get("spec", {}).get("syncPolicy") or {}).get("automated")
    return automated is not None and automated.get("enabled") is not False


def automated_policy(app: dict[str, Any]) -> dict[str, Any]:
    """``spec.syncPolicy.automated`` (empty when absent)."""
    return dict((app.get("spec", {}).get("syncPolicy") or {}).get("automated") or {})


def autosync_operation(
    app: dict[str, Any], revision: str, heal: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """The operation autoSync builds for ``revision`` (A2); ``heal``: the selfHeal resources."""
    spec = app["spec"]
    policy = spec.get("syncPolicy") or {}
    sync: dict[str, Any] = {
        "source": copy.deepcopy(spec.get("source")),
        "revision": revision,
        "prune": bool(automated_policy(app).get("prune")),
    }
    if policy.get("syncOptions"):
        sync["syncOptions"] = list(policy["syncOptions"])
    if heal is not None:
        last = ((app.get("status") or {}).get("operationState") or {}).get("operation") or {}
        healed = int((last.get("sync") or {}).get("autoHealAttemptsCount", 0))
        sync["autoHealAttemptsCount"] = healed + 1
        sync["resources"] = heal
    return {
        "sync": sync,
        "initiatedBy": {"automated": True},
        "retry": copy.deepcopy(policy["retry"]) if policy.get("retry") else dict(DEFAULT_RETRY),
    }


def new_state(operation: dict[str, Any], now: float) -> dict[str, Any]:
    """``NewOperationState``: Running, a copy of the operation, ``startedAt``."""
    return {"operation": copy.deepcopy(operation), "phase": RUNNING, "startedAt": stamp(now)}


def is_manual(state: dict[str, Any]) -> bool:
    """A6: manual iff ``operationState.operation.initiatedBy.automated`` is not true."""
    return not (state.get("operation", {}).get("initiatedBy") or {}).get("automated")


def waiting_for_retry(state: dict[str, Any]) -> bool:
    """A3: ``Running`` with a ``finishedAt`` is a failed attempt awaiting its retry."""
    return state.get("phase") == RUNNING and bool(state.get("finishedAt"))


def retries_left(state: dict[str, Any]) -> bool:
    """A3: ``retryCount < retry.limit``, or a negative limit (unlimited)."""
    limit = int((state["operation"].get("retry") or {}).get("limit", 0))
    return limit < 0 or int(state.get("retryCount", 0)) < limit


def next_retry_at(state: dict[str, Any]) -> float:
    """A3 ``NextRetryAt``: ``finishedAt + duration x factor^retryCount``, capped."""
    backoff = (state["operation"].get("retry") or {}).get("backoff") or {}
    duration = _seconds(backoff.get("duration"), BACKOFF_DURATION_S)
    factor = float(backoff.get("factor") or BACKOFF_FACTOR)
    cap = _seconds(backoff.get("maxDuration"), BACKOFF_MAX_S)
    wait = duration * factor ** int(state.get("retryCount", 0))
    return parse_stamp(str(state["finishedAt"])) + (min(wait, cap) if cap > 0 else wait)


def await_retry(state: dict[str, Any], message: str, now: float) -> dict[str, Any]:
    """A3: a failed attempt with retries left: Running, finishedAt, retryCount n+1."""
    count = int(state.get("retryCount", 0)) + 1
    waiting = {**state, "phase": RUNNING, "finishedAt": stamp(now), "retryCount": count}
    at = datetime.fromtimestamp(next_retry_at(waiting), UTC)
    waiting["message"] = f"{message}. Retrying attempt #{count} at {_kitchen(at)}."
    return waiting


def start_retry(state: dict[str, Any]) -> dict[str, Any]:
    """A3: a retry begins: new message, no finishedAt or syncResult; refresh drops the pin."""
    retry = state["operation"].get("retry") or {}
    operation = copy.deepcopy(state["operation"])
    latest = ""
    if retry.get("refresh"):
        sync = operation.setdefault("sync", {})
        sync["revision"] = ""
        sync.pop("revisions", None)
        latest = " with latest revisions"
    started = {k: v for k, v in state.items() if k not in ("finishedAt", "syncResult")}
    started["operation"] = operation
    started["message"] = f"Retrying operation{latest}. Attempt #{state.get('retryCount', 0)}"
    return started


def complete(state: dict[str, Any], phase: str, message: str, now: float) -> dict[str, Any]:
    """A2/A3: the final phase and ``finishedAt``; a retried failure says how often it retried."""
    count = int(state.get("retryCount", 0))
    if phase != SUCCEEDED and count > 0:
        message = f"{message} (retried {count} times)."
    return {**state, "phase": phase, "message": message, "finishedAt": stamp(now)}


def parse_stamp(text: str) -> float:
    """The epoch time of a ``metav1.Time`` text."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _seconds(value: Any, default: float) -> float:
    """A backoff duration: a Go duration string, or a bare integer of seconds (A1)."""
    if value is None or value == "":
        return default
    text = str(value)
    return float(text) if _SECONDS.match(text) else durations.parse(text)


def _kitchen(at: datetime) -> str:
    """Go's ``time.Kitchen`` layout, ``3:04PM``."""
    return f"{at.hour % 12 or 12}:{at.minute:02d}{'AM' if at.hour < 12 else 'PM'}"
