"""The safety world with an Argo CD Application as the GitTarget's applier (docs/safety.md).

The product's own Argo CD applier (``shared.appliers.argocd.ArgoApplier``, with every rule of
``shared.decide.argo`` and ``argo_check.application_problem``) is the adapter the
dispatcher's attempt uses; only the Kubernetes client under it is simulated
(``ArgoClient``): a get and a guarded update (PUT, 409 when ``metadata.resourceVersion``
changed) of one Application, each a point where the schedule may switch or crash.

The application-controller is reduced to what the core promise needs, as
``../shared/facts/appliers.md`` A2, A3 and A5 describe it (and ``sandbox/argocd`` plays it):

- automated sync is off (``automated: {enabled: false}``): nothing syncs unless the product
  sets ``operation``; the timed refresh applies nothing (A4), it writes ``status.sync`` and
  ``reconciledAt``, which makes an update read before it a 409;
- the controller consumes a set ``operation`` into ``status.operationState`` (``Running``, a
  copy of the operation, ``startedAt``), pins ``syncResult.revision`` to ``sync.revision``,
  then applies the commit's objects one at a time whenever the schedule lets it (a random
  delay, so API edits land inside a sync), each a forced server-side apply as
  ``argocd-controller`` (``ServerSideApply=true``, A5) with the tracking annotation, computed
  by the sandbox's managedFields double; there is no ``cleanupMetadata`` (Flux's alone), so a
  ``kubectl-edit`` entry whose only field Argo CD took back is gone, and a ``console`` entry
  (which keeps an annotation) stays, a tie when it shares Argo CD's second (W2);
- an object that fails to apply ends the sync ``Failed``, a sync that cannot run ends
  ``Error`` (before any object); with retries left (the operation's ``retry``, copied by the
  product from ``syncPolicy.retry``: limit 1 here) it stays ``Running`` with ``finishedAt``
  and ``retryCount`` and starts again after the backoff (the sandbox's own pure functions,
  ``sandbox.argocd.operation``); a completed sync writes ``finishedAt`` and ``operation:
  null`` in one write.

Invariants added to the world's (docs/safety.md "Argo CD"): no CatchUp is ever asked of the
Application (A1); an attempt is Delivered only once the sync carrying its token completed
(D6); a revert the apply window withheld is repaired (a request carrying ``Repair`` goes out
after it, and a Repair alone not before the colliding sync's window closed: ``AFTER_FINISH_S``
after that sync completed), and the cluster ends at the Git tip.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from sandbox.argocd import operation as ops
from sandbox.flux.conditions import timestamp
from sandbox.kube.managed import server_side_apply
from shared.appliers.argocd import ArgoApplier
from shared.decide.apply_window import AFTER_FINISH_S, Verdict
from shared.decide.argo import TOKEN_INFO, synced_commit
from shared.kube.errors import Conflict, NotFound
from shared.kube.kinds import APPLICATIONS
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest, AttemptOutcome
from tests.safety import cluster
from tests.safety.actors import yield_point
from tests.safety.cluster import NAMES, Live, value_in
from tests.safety.world import URL, Dispatcher, Violation, World

ARGO_NAMESPACE = "argocd"
APPLICATION = ApplierRef("Application", ARGO_NAMESPACE, "apps", "")
#: The field manager of every write of a sync (facts: appliers.md A5).
ARGO_MANAGER = "argocd-controller"
#: Argo CD's default resource tracking: an annotation naming the Application (A5).
TRACKING = "argocd.argoproj.io/tracking-id"
#: Was open (docs/safety.md, "an apply of an artifact older than the tip"): a sync pinned to a
#: commit an outside push has since replaced writes a value Git holds only in history; W1 now
#: withholds that write (``historical``). True would count such a value exempt from the
#: written-twice check (how the search ran past it before the fix); kept False, so the check
#: is strict.
HISTORICAL_OPEN = False
#: ``syncPolicy.retry``'s backoff (A1); its ``limit`` is the world's ``retry_limit``.
BACKOFF = {"duration": "5s", "factor": 2, "maxDuration": "1m"}


def _time(now: float) -> datetime:
    return datetime.fromtimestamp(now, tz=UTC)


def argo_config(name: str, value: str) -> dict[str, Any]:
    """What the sync applies for the object at ``value`` (the tracking annotation with it)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": cluster.NAMESPACE,
            "annotations": {TRACKING: f"apps:/ConfigMap:{cluster.NAMESPACE}/{name}"},
        },
        "data": {"v": value},
    }


def argo_apply(obj: dict[str, Any] | None, name: str, value: str, now: float) -> dict[str, Any]:
    """``obj`` after the sync's forced server-side apply as ``argocd-controller`` (A5)."""
    new = server_side_apply(
        obj,
        argo_config(name, value),
        manager=ARGO_MANAGER,
        force=True,
        api_version="v1",
        now=_time(now),
    )
    new["metadata"]["uid"] = cluster.meta(name)["uid"]
    return new


def application(seed: str, now: float, retry_limit: int) -> dict[str, Any]:
    """The Application as the installation finds it: automated sync off (its ``prune`` kept),
    the folder of this repository and branch, its last sync (not ours) finished at ``seed``."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": APPLICATION.name, "namespace": ARGO_NAMESPACE, "resourceVersion": "1"},
        "spec": {
            "project": "default",
            "source": {
                "repoURL": URL,
                "targetRevision": "main",
                "path": cluster.FOLDER,
                "directory": {"recurse": True},
            },
            "destination": {"server": "https://kubernetes.default.svc"},
            "syncPolicy": {
                "automated": {"enabled": False, "prune": True},
                "syncOptions": ["ServerSideApply=true"],
                "retry": {"limit": retry_limit, "backoff": dict(BACKOFF)},
            },
        },
        "status": {
            "operationState": {
                "operation": {"sync": {"revision": seed}, "initiatedBy": {"username": "admin"}},
                "phase": ops.SUCCEEDED,
                "message": "successfully synced (all tasks run)",
                "syncResult": {"revision": seed},
                "startedAt": timestamp(now),
                "finishedAt": timestamp(now),
            }
        },
    }


def token_of(operation: dict[str, Any]) -> str:
    """The request's token in an operation's ``info`` ("" for an operation not ours)."""
    for item in operation.get("info") or ():
        if item.get("name") == TOKEN_INFO:
            return str(item.get("value", ""))
    return ""


@dataclass(slots=True)
class Argo:
    """The Application as the API holds it, and what the controller's sync has left to do."""

    app: dict[str, Any]
    todo: list[str] = field(default_factory=list)  # objects the running sync has yet to apply
    #: token -> the clock when the sync carrying it completed (Succeeded, Failed or Error).
    completed: dict[str, float] = field(default_factory=dict)
    #: token -> the world's moment of that completion (what came first).
    completed_at: dict[str, int] = field(default_factory=dict)
    #: Objects the last sync that tried them did not apply (it completed Failed or Error).
    unapplied: set[str] = field(default_factory=set)

    @property
    def state(self) -> dict[str, Any]:
        return dict(self.app.get("status", {}).get("operationState") or {})

    @property
    def cause(self) -> str:
        """The token of the sync the controller runs ("" for none)."""
        return token_of(self.state.get("operation") or {})

    def pending(self) -> bool:
        """An operation is set and the controller has not taken it up."""
        state = self.state
        return self.app.get("operation") is not None and (
            not state or state.get("phase") in ops.COMPLETED
        )

    def syncing(self) -> bool:
        state = self.state
        return state.get("phase") == ops.RUNNING and not ops.waiting_for_retry(state)

    def retry_due(self, now: float) -> bool:
        state = self.state
        return ops.waiting_for_retry(state) and now >= ops.next_retry_at(state)

    def busy(self) -> bool:
        return self.app.get("operation") is not None or self.state.get("phase") == ops.RUNNING

    def write(self, app: dict[str, Any]) -> None:
        """A write of the Application: a new resourceVersion."""
        rv = int(self.app["metadata"]["resourceVersion"]) + 1
        app["metadata"]["resourceVersion"] = str(rv)
        self.app = app

    def write_state(self, state: dict[str, Any], *, operation_done: bool = False) -> None:
        app = copy.deepcopy(self.app)
        app.setdefault("status", {})["operationState"] = state
        if operation_done:
            app["operation"] = None
        self.write(app)


class ArgoClient:
    """The dispatcher's client for the Argo CD cluster: get and update of the Application."""

    def __init__(self, world: ArgoWorld) -> None:
        self.world = world

    def get(self, res: Any, namespace: str, name: str) -> dict[str, Any]:
        yield_point("argo-read")
        assert res == APPLICATIONS
        app = self.world.argo.app
        if (namespace, name) != (ARGO_NAMESPACE, APPLICATION.name):
            raise NotFound(f"{namespace}/{name}", 404)
        return copy.deepcopy(app)

    def update(self, res: Any, body: dict[str, Any], field_manager: str) -> dict[str, Any]:
        """PUT guarded by the body's resourceVersion; setting our operation is the stamp."""
        yield_point("argo-stamp")
        argo, world = self.world.argo, self.world
        have = argo.app["metadata"]["resourceVersion"]
        if body["metadata"].get("resourceVersion") != have:
            world.say(f"Application update: 409 (read {body['metadata'].get('resourceVersion')})")
            raise Conflict("the object has been modified", 409)
        token = token_of(body.get("operation") or {})
        world.check_requests()
        world.on_stamp(world.request_of[token], token)
        argo.write(copy.deepcopy(body))
        revision = str(body["operation"]["sync"]["revision"])
        world.say(f"operation set by {field_manager}: sync {revision[:6]}")
        return copy.deepcopy(argo.app)


class ArgoWorld(World):
    """``World`` whose GitTarget's applier is an Argo CD Application (its Flux stays idle)."""

    applier: ClassVar[ApplierRef] = APPLICATION
    historical_open: ClassVar[bool] = HISTORICAL_OPEN
    #: ``syncPolicy.retry.limit``: 1, a failed sync waits and runs again once (A3); 0, every
    #: failure is final (``NoRetryArgoWorld``).
    retry_limit: ClassVar[int] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        seed = self.remote.tip or ""
        self.live = {
            n: Live(f"{n}0", "argo", self.moment, argo_apply(None, n, f"{n}0", self.now))
            for n in NAMES
        }
        self.argo = Argo(application(seed, self.now, self.retry_limit))
        self.adapter = ArgoApplier()  # type: ignore[assignment]  # the product's own
        self.applier_client = ArgoClient(self)
        self.request_of: dict[str, ApplyRequest] = {}
        self.checked = 0  # requests already checked (``check_requests``)

    # -- the application-controller -----------------------------------------------------------

    def argo_start(self) -> None:
        """The controller takes up the operation: Running, the revision pinned (A2)."""
        argo = self.argo
        operation = copy.deepcopy(argo.app["operation"])
        state = ops.new_state(operation, self.now)
        state["syncResult"] = {"revision": operation["sync"]["revision"]}
        argo.write_state(state)
        argo.todo = list(NAMES)
        revision = str(state["syncResult"]["revision"])
        self.say(f"Argo CD starts the sync {argo.cause[:6]} at {revision[:6]}")

    def argo_retry(self) -> None:
        """A failed sync's retry starts after the backoff (A3): the same pinned revision."""
        argo = self.argo
        state = ops.start_retry(argo.state)
        state["syncResult"] = {"revision": state["operation"]["sync"]["revision"]}
        argo.write_state(state)
        argo.todo = list(NAMES)
        self.say(f"Argo CD retries the sync {argo.cause[:6]}")

    def argo_apply(self) -> None:
        """The sync applies its next object (forced SSA as ``argocd-controller``)."""
        argo = self.argo
        revision = str(argo.state["syncResult"]["revision"])
        name = argo.todo.pop(0)
        argo.unapplied.discard(name)
        value = value_in(self.remote.tree(revision), name)
        live = self.live[name]
        if value is not None and value != live.value:
            obj = argo_apply(live.obj, name, value, self.now)
            # Each write its own resourceVersion: a sync may write a value back that an earlier
            # one wrote (two reverts to it), and the guard's decisions are kept by it.
            self.writes += 1
            after = Live(value, "argo", self.moment, obj, f"{value}~{self.writes}")
            if live.by == "api" and live.value not in self.ancestry_values(revision)[name]:
                self.collide(name, live, after, cause=argo.cause, manager=ARGO_MANAGER)
            elif value != value_in(self.remote.tree(self.remote.tip), name):
                self.counts["historical"] += 1
                self.say(f"HISTORICAL: Argo CD writes {name}={value}, not the tip's value")
                if self.historical_open:
                    self.exempt.add(value)
            self.live[name] = after
            self.watcher.observe(after)
            self.say(f"Argo CD applies {name}={value} from {revision[:6]}")
        if not argo.todo:
            self.argo_end(ops.SUCCEEDED, "successfully synced (all tasks run)")

    def argo_fail(self) -> None:
        """The next object fails to apply: the sync is Failed (A3)."""
        name = self.argo.todo[0]
        self.argo_end(ops.FAILED, f"one or more objects failed to apply, reason: {name}")

    def argo_error(self) -> None:
        """The sync cannot run (a comparison error, say): Error before any object (A3)."""
        self.argo_end(ops.ERROR, "ComparisonError: rpc error")

    def argo_refresh(self) -> None:
        """A comparison (the timed refresh, A4): ``status.sync`` and ``reconciledAt``
        written, nothing applied (automated sync is off). A write of the Application, so an
        update read before it gets a 409."""
        app = copy.deepcopy(self.argo.app)
        tip = self.remote.tip or ""
        synced = self.argo.state.get("syncResult", {}).get("revision") == tip
        status = app.setdefault("status", {})
        status["sync"] = {"status": "Synced" if synced else "OutOfSync", "revision": tip}
        status["reconciledAt"] = timestamp(self.now)
        self.argo.write(app)
        self.say(f"Argo CD refreshes the Application ({status['sync']['status']})")

    def argo_end(self, phase: str, message: str) -> None:
        """A3: a failure with retries left waits for its retry; else the sync completes and
        ``operation`` is cleared in the same write."""
        argo = self.argo
        left, argo.todo = argo.todo, []
        state = argo.state
        if phase != ops.SUCCEEDED and ops.retries_left(state):
            argo.write_state(ops.await_retry(state, message, self.now))
            self.say(f"Argo CD sync {argo.cause[:6]} {phase}, waits for its retry")
            return
        cause = argo.cause
        argo.unapplied |= set(left)
        argo.write_state(ops.complete(state, phase, message, self.now), operation_done=True)
        argo.completed[cause] = self.now
        argo.completed_at[cause] = self.moment
        self.say(f"Argo CD sync {cause[:6]} completed {phase}")

    def applier_actions(self) -> list[tuple[str, Callable[[], None]]]:
        argo, acts = self.argo, []
        if argo.pending():
            acts += [("argo starts the sync", self.argo_start)] * 2
        if argo.syncing() and argo.todo:
            acts += [("argo applies an object", self.argo_apply)] * 3
            acts.append(("argo apply fails", self.argo_fail))
            if len(argo.todo) == len(NAMES):
                acts.append(("argo sync errors", self.argo_error))
        if argo.retry_due(self.now):
            acts += [("argo retries", self.argo_retry)] * 2
        acts.append(("argo refreshes", self.argo_refresh))
        return acts

    def settle_applier(self) -> None:
        """Settling: the controller takes up what is set and every sync runs to its end."""
        argo = self.argo
        for _ in range(4):
            if argo.pending():
                self.argo_start()
            elif argo.retry_due(self.now):
                self.argo_retry()
            while argo.syncing() and argo.todo:
                self.argo_apply()

    def applied_commit(self, ref: ApplierRef, namespaces: Collection[str]) -> str | None:
        """The Application's last successful sync (what the product's reader reads, issue 23)."""
        yield_point("kube-read")
        return synced_commit(self.argo.app)

    def diverged(self) -> set[str]:
        """A sync that completed Failed or Error leaves its unapplied objects to the user
        (docs/argocd.md: "the request is finished, fix the folder or the cluster")."""
        return set(self.argo.unapplied)

    def settled(self) -> bool:
        """The world's settled (the owner read the remote's tip, Q7: an Application syncs only
        the commit it is asked for, so an outside push whose webhook was lost is applied only
        once the owner's steady tick read it) and the controller idle."""
        return not self.argo.busy() and super().settled()

    def pending_summary(self) -> str:
        operation = self.argo.app.get("operation")
        return f"{super().pending_summary()} argo={self.argo.state} op={operation}"

    # -- invariants ---------------------------------------------------------------------------

    def _finish(self, d: Dispatcher, request: ApplyRequest, outcome: AttemptOutcome) -> None:
        """D6: an attempt whose operation was set is Delivered only once its sync completed."""
        stamped = request.token in self.stamps
        if outcome.outcome == "Delivered" and stamped and request.token not in self.argo.completed:
            raise Violation(f"{request.token} Delivered before its sync completed")
        super()._finish(d, request, outcome)

    def check_requests(self) -> None:
        """A1: no CatchUp is ever asked of an Application; W1: a Repair alone waits out the
        window of every sync that reverted an edit before it (completed ``AFTER_FINISH_S``
        earlier at least)."""
        for request, at, moment in self.requests[self.checked :]:
            self.request_of[request.token] = request
            if "CatchUp" in request.reasons:
                raise Violation(f"a CatchUp was asked of an Application: {request.token}")
            if set(request.reasons) != {"Repair"}:
                continue
            for r in self.reverts:
                # A sync still running when the request was sent holds the Repair Busy (D5).
                ended = self.argo.completed_at.get(r.cause)
                if r.tie or r.moment > moment or ended is None or ended > moment:
                    continue
                done = self.argo.completed[r.cause]
                if at < done + AFTER_FINISH_S:
                    raise Violation(
                        f"a Repair went out at {at - 1000:.1f}, inside the window of the sync "
                        f"{r.cause[:6]} that reverted {r.name}={r.edit} (completed "
                        f"{done - 1000:.1f})"
                    )
        self.checked = len(self.requests)

    def check_step(self) -> None:
        super().check_step()
        self.check_requests()

    def check_end(self) -> None:
        """The world's end checks, then W1's Repair: every withheld revert whose object the
        API did not edit again was judged withheld and a request carrying a Repair went out
        after it."""
        self.check_requests()
        super().check_end()
        for r in self.reverts:
            if r.tie or any(m > r.moment for m in self.api_moments[r.name]):
                continue
            decision = self.decisions.get(r.rv)
            if decision is None or decision.verdict is not Verdict.WITHHELD:
                raise Violation(f"the revert of {r.name}={r.edit} was judged {decision}")
            if not any("Repair" in q.reasons and m > r.moment for q, _, m in self.requests):
                raise Violation(f"no Repair was asked after the revert of {r.name}={r.edit}")


class NoRetryArgoWorld(ArgoWorld):
    """An Application whose ``syncPolicy.retry.limit`` is 0: a Failed or Error is final."""

    retry_limit: ClassVar[int] = 0
