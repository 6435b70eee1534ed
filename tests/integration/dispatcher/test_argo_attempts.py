"""One Argo CD attempt against the sandbox: the API double with access rules, a Git host, Redis.

The Application lives in a second API server (the applier's ClusterProvider) whose access
rules give the product exactly the grant the code needs, get and update on
``applications.argoproj.io`` in one namespace (O4), and nothing else: no allow-all. The test
plays the Argo CD application controller (facts: appliers.md A2 "How the controller consumes
and clears it", appliers.md A3): each time the attempt pauses, ``Controller.step`` takes
the next state of its script, reading the operation the product set and writing
``status.operationState`` and ``operation`` itself. Time is the attempt's injected clock, moved by
those pauses, so nothing here sleeps.

D5 (a pinned sync with our initiator and token, a running operation waited out and never
replaced, a 409 read again), D6 (Delivered only when our operation completed, the phase in
the ledger), O4 (the grant is exactly what an attempt and the check use). A1 for an
Application (never a CatchUp) is tests/integration/branch_worker/test_appliers.py's.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client
from prometheus_client import REGISTRY

from sandbox import manifests as m
from sandbox.githost import GitHost
from sandbox.githost.outside import git
from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import Context, finish, ports
from shared.appliers import for_kind
from shared.decide.applier_check import Subject
from shared.kube.api import KubeClient, Obj
from shared.model.config import ApplierRef
from shared.model.ids import GitTargetUid
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.model.resources import ApiResource
from tests.configs import branch_config
from tests.fixtures import dispatcher_context, owned_at_tip
from tests.integration.dispatcher.test_attempts import CM, NS

pytestmark = pytest.mark.integration

ARGO_NS = "argocd"
PRODUCT, ADMIN = "product-token", "admin-token"
#: The chart's Argo CD grant, exactly (O4): get and update on applications, one namespace.
GRANT = AccessRule(
    "gitops-reverser", ("get", "update"), ("argoproj.io",), ("applications",), (ARGO_NS,)
)
NO_UPDATE = dataclasses.replace(GRANT, verbs=("get",))
EVERYTHING = AccessRule("argocd", ("*",), ("*",), ("*",))
APP = ApplierRef("Application", ARGO_NS, "web", "remote")
POLICY = {
    "automated": {"enabled": False, "prune": True},
    "syncOptions": ["ServerSideApply=true"],
    "retry": {"limit": 2, "backoff": {"duration": "5s"}, "refresh": True},
}


def application(url: str, **extra: Any) -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": ARGO_NS},
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": NS},
            "source": {"repoURL": url, "path": "apps", "targetRevision": "main"},
            "syncPolicy": copy.deepcopy(POLICY),
        },
        **extra,
    }


@dataclass
class Controller:
    """The Argo CD controller's part, one scripted state per pause (appliers.md A2, A3).

    Each entry of ``script`` takes the Application as it is now and returns its next
    ``operation`` and ``status.operationState`` (``KEEP`` leaves ``operation`` as it is).
    ``seen`` records every operation it found, to show which one it was running.
    """

    api: client.CustomObjectsApi
    script: list[Callable[[Obj], tuple[Any, Obj]]]
    seen: list[Obj | None] = field(default_factory=list)
    steps: int = 0

    def get(self) -> Obj:
        obj: Obj = self.api.get_namespaced_custom_object(  # type: ignore[assignment]
            "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web"
        )
        return obj

    def step(self, _seconds: float = 0.0) -> None:
        app = self.get()
        self.seen.append(copy.deepcopy(app.get("operation")))
        if self.steps >= len(self.script):
            return
        operation, state = self.script[self.steps](app)
        self.steps += 1
        if operation is not KEEP:
            app["operation"] = operation
        app.setdefault("status", {})["operationState"] = state
        self.api.replace_namespaced_custom_object(
            "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web", app
        )


KEEP = object()


def runs(app: Obj, **extra: Any) -> tuple[Any, Obj]:
    """The controller picked up ``operation``: phase Running (appliers.md A2 NewOperationState)."""
    state = (app.get("status") or {}).get("operationState") or {}
    operation = app.get("operation") or state.get("operation")
    new = {"operation": operation, "phase": "Running", "startedAt": "2026-12-01T10:00:00Z"}
    return KEEP, {**new, **extra}


def ends(phase: str, message: str = "") -> Callable[[Obj], tuple[Any, Obj]]:
    """The operation completed: ``operation: null`` and the state's phase (appliers.md A2, A3)."""

    def end(app: Obj) -> tuple[Any, Obj]:
        state = dict(app["status"]["operationState"])
        state.pop("finishedAt", None)
        revision = state["operation"]["sync"].get("revision", "")
        state |= {"phase": phase, "message": message, "finishedAt": "2026-12-01T10:01:00Z"}
        state["syncResult"] = {"revision": revision}
        return None, state

    return end


@dataclass
class Rig:
    local: KubeApiServer
    remote: KubeApiServer
    url: str
    ctx: Context
    admin: client.CustomObjectsApi
    uid: str
    now: list[float]

    def tip(self) -> str:
        return git("ls-remote", self.url, "refs/heads/main").split()[0]

    def request(self, reasons: list[str]) -> ApplyRequest:
        bk = self.ctx.configs.publish_branch(branch_config(self.url, "main", NS, "gp"))
        return ApplyRequest(
            uuid.uuid4().hex,
            bk,
            self.url,
            "main",
            self.tip(),
            {r: [self.uid] for r in reasons},  # type: ignore[misc]
            APP,
            time.time(),
        )

    def run(
        self,
        request: ApplyRequest,
        controller: Controller,
        wrap: Callable[[KubeClient], KubeClient] = lambda c: c,
    ) -> AttemptOutcome:
        base = ports(self.ctx)

        def pause(seconds: float) -> None:
            self.now[0] += seconds
            controller.step()

        wired = dataclasses.replace(
            base,
            cluster_for=lambda name: wrap(base.cluster_for(name)),
            clock=lambda: self.now[0],
            pause=pause,
            handled_timeout_s=60.0,
        )
        outcome = attempts.run(request, wired)
        finish(self.ctx, request, outcome)
        return outcome


def _rig(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str, grant: AccessRule
) -> Iterator[Rig]:
    local = KubeApiServer(all_crd_files())
    tokens = {PRODUCT: "gitops-reverser", ADMIN: "argocd"}
    remote = KubeApiServer(all_crd_files(), tokens=tokens, rules=[grant, EVERYTHING])
    local.start()
    remote.start()
    host = GitHost(tmp_path / "git")
    host.start()
    try:
        url = host.create_repo("apps", files={"apps/cm.yaml": CM.format(v=1).encode()})
        uid = _ours(local, remote, url, tmp_path)
        admin_api = remote.api_client(token=ADMIN)
        client.CoreV1Api(admin_api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=ARGO_NS))
        )
        admin = client.CustomObjectsApi(admin_api)
        admin.create_namespaced_custom_object(
            "argoproj.io", "v1alpha1", ARGO_NS, "applications", application(url)
        )
        ctx = dispatcher_context(redis_client, key_prefix, local.api_client())
        rig = Rig(local, remote, url, ctx, admin, uid, [1000.0])
        owned_at_tip(ctx, redis_client, url, NS, "gp", tip=rig.tip())
        yield rig
    finally:
        host.stop()
        remote.stop()
        local.stop()


def _ours(local: KubeApiServer, remote: KubeApiServer, url: str, tmp_path: Path) -> str:
    """Our objects in the local cluster; the GitTarget names the remote Application, which
    the ClusterProvider allows for its namespace (T2)."""
    remote.write_kubeconfig(tmp_path / "remote.kubeconfig", token=PRODUCT)
    core = client.CoreV1Api(local.api_client())
    for name in (NS, "gitops-reverser"):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_secret(
        "gitops-reverser",
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="remote"),
            string_data={"kubeconfig": (tmp_path / "remote.kubeconfig").read_text()},
        ),
    )
    spec = {
        "kubeConfig": {"secretRef": {"name": "remote", "key": "kubeconfig"}},
        "accessFrom": {"names": [NS]},
        # The Application lives in argocd: allowed for the GitTarget's namespace (T2).
        "crossNamespaceAppliers": [{"namespace": ARGO_NS, "accessFrom": {"names": [NS]}}],
    }
    applier = {
        "applicationRef": {"name": "web", "namespace": ARGO_NS},
        "clusterProviderRef": {"name": "remote"},
    }
    m.create(local.api_client(), m.cluster_provider("remote", **spec))
    m.create(local.api_client(), m.git_provider(NS, "gp", url))
    target = m.git_target(NS, "gt", "gp", "apps", applier=applier, onRefusal="Reapply")
    return str(m.create(local.api_client(), target)["metadata"]["uid"])


@pytest.fixture
def rig(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[Rig]:
    yield from _rig(tmp_path, redis_client, key_prefix, GRANT)


@pytest.fixture
def denied(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[Rig]:
    yield from _rig(tmp_path, redis_client, key_prefix, NO_UPDATE)


def _delivered() -> float:
    labels = {"applier_kind": "application", "reason": "ForeignCommit", "outcome": "Delivered"}
    value = REGISTRY.get_sample_value("gitops_reverser_apply_requests_total", labels)
    return value or 0.0


def _operation_of(controller: Controller) -> Obj:
    return next(op for op in controller.seen if op)


def test_a_request_sets_the_pinned_operation_and_is_delivered_when_it_succeeds(rig: Rig) -> None:
    """D5: one update sets the sync automated sync would build, pinned to the commit, with
    our initiator and token and the retry without refresh; D6: Delivered at Succeeded."""
    controller = Controller(rig.admin, [runs, ends("Succeeded", "successfully synced")])
    request = rig.request(["ForeignCommit"])
    before = _delivered()
    outcome = rig.run(request, controller)
    assert _delivered() == before + 1, 'apply_requests_total{applier_kind="application"}'
    assert outcome.outcome == "Delivered", outcome.message
    assert "sync Succeeded" in outcome.message and "successfully synced" in outcome.message
    operation = _operation_of(controller)
    assert operation["sync"]["revision"] == request.commit
    assert operation["sync"]["source"]["path"] == "apps"
    assert operation["sync"]["prune"] is True
    assert operation["sync"]["syncOptions"] == ["ServerSideApply=true"]
    assert operation["initiatedBy"] == {"username": "gitops-reverser", "automated": True}
    assert {"name": "gitops-reverser/token", "value": request.token} in operation["info"]
    assert operation["retry"] == {"limit": 2, "backoff": {"duration": "5s"}}
    last, _ = rig.ctx.ledger.last_request(GitTargetUid(rig.uid))
    assert last is not None and last.outcome == "Delivered" and "Succeeded" in last.message


def test_a_running_operation_is_waited_out_and_never_replaced(rig: Rig) -> None:
    """D5: someone else's operation (held by a sync window, appliers.md A6) runs on; the
    attempt writes nothing until it completed, then sets its own."""
    theirs = {"sync": {"revision": "abc"}, "initiatedBy": {"username": "alice"}}
    held = "Sync operation blocked by sync window"
    app = rig.admin.get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web"
    )
    app["operation"] = theirs  # type: ignore[index]
    rig.admin.replace_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web", app
    )
    script = [
        lambda a: runs(a, message=held),
        lambda a: runs(a, message=held),
        ends("Succeeded"),
        runs,
        ends("Succeeded"),
    ]
    controller = Controller(rig.admin, script)
    outcome = rig.run(rig.request(["ForeignCommit"]), controller)
    assert outcome.outcome == "Delivered", outcome.message
    users = [(op or {}).get("initiatedBy", {}).get("username") for op in controller.seen]
    assert users[:3] == ["alice", "alice", "alice"], "never replaced while it ran"
    assert users[3] is None or users[3] == "gitops-reverser"
    assert "gitops-reverser" in users


def test_an_operation_that_never_ends_fails_the_attempt_clearly(rig: Rig) -> None:
    """D5: waited out only up to the attempt's deadline, then Failed naming what held it."""
    app = rig.admin.get_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web"
    )
    app["operation"] = {"sync": {}, "initiatedBy": {"username": "alice"}}  # type: ignore[index]
    rig.admin.replace_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ARGO_NS, "applications", "web", app
    )
    controller = Controller(rig.admin, [])
    outcome = rig.run(rig.request(["ForeignCommit"]), controller)
    assert outcome.outcome == "Failed"
    assert outcome.message == (
        "timeout: Application argocd/web: an operation is set (by alice), not started yet"
    )
    assert all(op == app["operation"] for op in controller.seen)  # type: ignore[index]


class Bumping(KubeClient):
    """A seam between the attempt's read and its write: the first update finds the
    Application changed by someone else (a label), as a real race would."""

    def __init__(self, inner: KubeClient, admin: client.CustomObjectsApi) -> None:
        super().__init__(inner.api_client, inner.cluster)
        self.admin = admin
        self.updates = 0

    def update(self, res: ApiResource, body: Obj, field_manager: str) -> Obj:
        self.updates += 1
        if self.updates == 1:
            self.admin.patch_namespaced_custom_object(
                "argoproj.io",
                "v1alpha1",
                ARGO_NS,
                "applications",
                "web",
                {"metadata": {"labels": {"touched": "yes"}}},
            )
        return super().update(res, body, field_manager)


def test_a_conflicting_update_reads_again_and_keeps_the_other_write(rig: Rig) -> None:
    """D5: the update is guarded by the resourceVersion read; the 409 reads again and the
    second update carries the other writer's change instead of overwriting it."""
    seams: list[Bumping] = []

    def wrap(inner: KubeClient) -> KubeClient:
        seams.append(Bumping(inner, rig.admin))
        return seams[-1]

    controller = Controller(rig.admin, [runs, ends("Succeeded")])
    outcome = rig.run(rig.request(["Refusal"]), controller, wrap)
    assert outcome.outcome == "Delivered", outcome.message
    assert [s.updates for s in seams] == [2]
    app = controller.get()
    assert app["metadata"]["labels"] == {"touched": "yes"}


def test_a_retry_wait_is_not_finished_and_a_failed_sync_is_delivered_as_failed(
    rig: Rig,
) -> None:
    """D6: ``Running`` with ``finishedAt`` (appliers.md A3: a failed sync waiting for its
    retry) is not Delivered; the final ``Failed`` is, with the phase and message in the ledger."""
    retrying = "one or more objects failed to apply. Retrying attempt #1 at 10:01AM."
    script = [
        runs,
        lambda a: runs(a, finishedAt="2026-12-01T10:01:00Z", retryCount=1, message=retrying),
        lambda a: runs(a, message="Retrying operation. Attempt #2"),
        ends("Failed", "one or more objects failed to apply (retried 1 times)."),
    ]
    controller = Controller(rig.admin, script)
    outcome = rig.run(rig.request(["ForeignCommit"]), controller)
    assert controller.steps == 4, "no outcome before the last state"
    assert outcome.outcome == "Delivered", outcome.message
    assert "sync Failed" in outcome.message and "retried 1 times" in outcome.message
    last, _ = rig.ctx.ledger.last_request(GitTargetUid(rig.uid))
    assert last is not None and "sync Failed" in last.message


def test_without_update_the_attempt_fails_clearly_and_the_check_says_access_denied(
    denied: Rig,
) -> None:
    """O4: with get alone the PUT is forbidden; the outcome says who may not update what,
    and ApplierConfigured (asked through the same kubeconfig) says AccessDenied."""
    controller = Controller(denied.admin, [runs, ends("Succeeded")])
    outcome = denied.run(denied.request(["ForeignCommit"]), controller)
    assert outcome.outcome == "Failed"
    assert "403" in outcome.message
    assert 'cannot update resource "applications"' in outcome.message
    assert controller.steps == 0 and "operation" not in controller.get()
    product = ports(denied.ctx).cluster_for("remote")
    subject = Subject(NS, denied.url, "main", "apps", APP)
    verdict = for_kind("Application").validate(product, subject, 0.0)
    assert (verdict.reason, verdict.message) == (
        "AccessDenied",
        "not allowed to update applications.argoproj.io argocd/web",
    )


def test_with_the_grant_the_check_is_configured(rig: Rig) -> None:
    """S2 and O4: get and update are all ApplierConfigured asks for, and all it needs."""
    product = ports(rig.ctx).cluster_for("remote")
    verdict = for_kind("Application").validate(
        product, Subject(NS, rig.url, "main", "apps", APP), 0
    )
    assert verdict.reason == "Configured", verdict.message
