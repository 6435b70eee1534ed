"""The Argo CD double's operation processing: consume ``operation``, sync, record, clear.

Facts (../shared/facts/appliers.md A2 "How the controller consumes and clears it", A3, A5, A6):

1. With no operation in progress (no ``operationState``, or a completed one) the state
   becomes ``{phase: Running, operation: <copy>, startedAt}`` and is written at once.
   ``Terminating`` ends ``Failed``. A failed attempt awaiting its retry waits until
   ``NextRetryAt``, then starts again (``retry.refresh`` drops the pinned revision).
2. Sync windows are checked on each pass: a blocked operation stays ``Running`` with the
   message "Sync operation blocked by sync window" and is looked at again later.
3. The revision is ``sync.revision``, or ``targetRevision`` resolved when none is pinned;
   ``syncResult.revision`` is the concrete commit, written before the sync so a resumed
   operation is stable. An app whose last comparison failed is refused with ``Error``.
4. The sync applies the folder (``sync.resources`` restricts it) with field manager
   ``argocd-controller`` (server-side apply with ``ServerSideApply=true``), prunes tracked
   leftovers only when ``sync.prune`` says so, and ends ``Succeeded``, ``Failed`` (an object
   failed) or ``Error`` (nothing could run: the revision or folder failed).
5. A failure with retries left stays ``Running`` with ``finishedAt`` and ``retryCount``;
   otherwise ``finishedAt`` is set and ``{"status": {"operationState": ...}, "operation":
   null}`` is patched in one write, with ``status.history`` for a full successful sync; a
   refresh follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.argocd import operation as ops
from sandbox.argocd.cluster import SyncFailed
from sandbox.argocd.policy import can_sync, with_history
from sandbox.argocd.refresh import COMPARISON_ERROR
from sandbox.argocd.render import RenderFailed
from sandbox.argocd.workspace import BLOCKED, FINISHED, RETRY_WAIT, STARTED, Workspace
from sandbox.flux.triggers import ObjectKey

BLOCKED_MESSAGE = "Sync operation blocked by sync window"  # A3, A6
SUCCESS_MESSAGE = "successfully synced (all tasks run)"
SERVER_SIDE = "ServerSideApply=true"  # A1 syncOptions, A5


@dataclass(frozen=True, slots=True)
class Step:
    """What one pass over an operation ended with."""

    finished: bool = False  # the operation completed: a refresh follows
    wake_at: float | None = None  # when the operation needs another pass


class Syncer:
    """Processes the ``operation`` of one Application."""

    def __init__(self, work: Workspace) -> None:
        self._work = work

    def process(self, key: ObjectKey, app: dict[str, Any]) -> Step:
        """One pass over ``app``'s operation (A2, A3, A6)."""
        work = self._work
        now = work.clock()
        if "status" not in app:  # the JSON patches below add under /status
            app = work.api.patch(key, {"status": {}}) or app
        state = (app.get("status") or {}).get("operationState")
        if not state or state.get("phase") in ops.COMPLETED:
            state = ops.new_state(app["operation"], now)
            self._write(key, state)
            work.record(key, STARTED, "")
        elif state.get("phase") == ops.TERMINATING:
            return self._finish(key, app, state, ops.FAILED, "Operation terminated")
        elif ops.waiting_for_retry(state):
            retry_at = ops.next_retry_at(state)
            if now < retry_at:
                return Step(wake_at=retry_at)
            state = ops.start_retry(state)
            self._write(key, state)
            work.record(key, STARTED, "", state["message"])
        if not can_sync(work.windows, ops.is_manual(state)):
            if state.get("message") != BLOCKED_MESSAGE:
                state = {**state, "message": BLOCKED_MESSAGE}
                self._write(key, state)
                work.record(key, BLOCKED, "", BLOCKED_MESSAGE)
            return Step(wake_at=now + work.settings.operation_requeue_s)
        return self._sync(key, app, state)

    def _sync(self, key: ObjectKey, app: dict[str, Any], state: dict[str, Any]) -> Step:
        work = self._work
        conditions = (app.get("status") or {}).get("conditions") or []
        failed = [c for c in conditions if c.get("type") == COMPARISON_ERROR]
        if failed:
            return self._end(key, app, state, ops.ERROR, str(failed[0].get("message", "")))
        sync = state["operation"].get("sync") or {}
        source = sync.get("source") or app["spec"].get("source") or {}
        try:
            target = sync.get("revision") or source.get("targetRevision") or "HEAD"
            sha = work.renderer.resolve(str(source.get("repoURL", "")), str(target))
            state = {**state, "syncResult": {"revision": sha, "source": source}}
            self._write(key, state)
            desired = work.desired(app, source, sha)
        except RenderFailed as err:
            return self._end(key, app, state, ops.ERROR, str(err))
        try:
            self._apply(app, sync, desired)
        except SyncFailed as err:
            message = f"one or more objects failed to apply, reason: {err}"
            return self._end(key, app, state, ops.FAILED, message)
        return self._end(key, app, state, ops.SUCCEEDED, SUCCESS_MESSAGE)

    def _apply(self, app: dict[str, Any], sync: dict[str, Any], desired: list[Any]) -> None:
        work = self._work
        only = {
            (r.get("kind"), r.get("namespace", ""), r.get("name"))
            for r in sync.get("resources") or []
        }

        def chosen(kind: str, namespace: str, name: str) -> bool:
            return not only or (kind, namespace, name) in only

        entries = work.compare(app, desired)
        work.pacing.hold(work.stop)  # a stop while held leaves the operation Running
        server_side = SERVER_SIDE in (sync.get("syncOptions") or [])
        for index, obj in enumerate(desired):
            meta = obj["metadata"]
            if not chosen(obj["kind"], meta.get("namespace", ""), meta["name"]):
                continue
            if index:
                work.pacing.between(work.stop)
            work.cluster.apply(obj, server_side)
        if sync.get("prune"):
            for entry in entries:
                if entry.get("requiresPruning") and chosen(
                    entry["kind"], entry.get("namespace", ""), entry["name"]
                ):
                    work.cluster.prune(entry)

    def _end(
        self, key: ObjectKey, app: dict[str, Any], state: dict[str, Any], phase: str, message: str
    ) -> Step:
        """A3: retry a failure with retries left, else complete."""
        work = self._work
        if phase != ops.SUCCEEDED and ops.retries_left(state):
            waiting = ops.await_retry(state, message, work.clock())
            self._write(key, waiting)
            work.record(key, RETRY_WAIT, "", waiting["message"])
            return Step(wake_at=ops.next_retry_at(waiting))
        return self._finish(key, app, state, phase, message)

    def _finish(
        self, key: ObjectKey, app: dict[str, Any], state: dict[str, Any], phase: str, message: str
    ) -> Step:
        work = self._work
        done = ops.complete(state, phase, message, work.clock())
        status = {"operationState": done, "history": with_history(app, done)}
        work.api.patch(key, {"status": status, "operation": None})
        revision = str((done.get("syncResult") or {}).get("revision", ""))
        work.record(key, FINISHED, revision, phase)
        return Step(finished=True)

    def _write(self, key: ObjectKey, state: dict[str, Any]) -> None:
        """Replace ``status.operationState`` (a JSON patch ``add``, as master sends it, A2)."""
        self._work.api.patch(
            key, [{"op": "add", "path": "/status/operationState", "value": state}], json_patch=True
        )
