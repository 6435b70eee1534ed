"""Argo CD tenants for the e2e tests (issue 10 section 4): access rules, Applications, a recorder.

The system runs with the API server double authenticating and authorizing every request
(``IDENTITIES``): the product's kubeconfig carries the token of user ``gitops-reverser``,
which may do anything in every API group but ``argoproj.io``, and there exactly the chart's
Argo CD grant (O4): get and update on ``applications`` in namespace ``argocd``. The tests and
the sandbox's doubles (Flux, Argo CD) act as an administrator. All product processes share
the one identity, so the grant bounds the watcher, the branch workers, the dispatcher and the
receiver alike.

An ``ArgoTenant`` is a tenant (``conftest.Tenants.make``) whose GitTarget ``gt`` names the
Application ``argocd/<name>`` with automated sync off (docs/argocd.md), allowed by
ClusterProvider ``default``'s ``crossNamespaceAppliers`` (T2), and an
``AppRecorder`` that watches that Application for the whole test, so a test can say which
operations were ever set on it and by whom.
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from sandbox.argocd import ArgoCDController
from sandbox.kube.access import AccessRule
from sandbox.kube.resources import BUILTINS, load_crds
from sandbox.paths import all_crd_files
from sandbox.stack import Identities
from shared.model.config import ApplierRef
from tests.e2e.conftest import (
    CONFIGMAPS,
    FLUX_SETTINGS,
    WAIT_S,
    WEBHOOK_TOKEN,
    ApplierTenant,
    FluxTenant,
    FluxTenants,
    Tenant,
)
from tests.e2e.system import GROUP, System
from tests.helpers import wait_until

ARGO_NS = "argocd"
APPS = ("argoproj.io", "v1alpha1", "applications")
PRODUCT_USER = "gitops-reverser"
OURS = "gitops-reverser"  # initiatedBy.username of the operations the product sets (D5)
#: The chart's Argo CD grant (docs/argocd.md "Permissions"), exactly.
GRANT = AccessRule(PRODUCT_USER, ("get", "update"), (APPS[0],), (APPS[2],), (ARGO_NS,))
#: FLUX_SETTINGS, with an attempt out for 30s before it is handed back (A4), so an attempt
#: that waits out a held or retried sync is not handed back while it waits.
ARGO_SETTINGS = {**FLUX_SETTINGS, "attempt_deadline": "30s"}


def identities() -> Identities:
    """Tokens and rules of the e2e API server (see the module docstring)."""
    groups = {t.group for t in BUILTINS} | {c["spec"]["group"] for c in load_crds(all_crd_files())}
    rules = (
        AccessRule("admin", ("*",), ("*",), ("*",)),
        AccessRule(PRODUCT_USER, ("*",), tuple(sorted(groups - {APPS[0]})), ("*",)),
        GRANT,
    )
    tokens = {"e2e-product-token": PRODUCT_USER, "e2e-admin-token": "admin"}
    return Identities(tokens, rules, "e2e-product-token", "e2e-admin-token")


def application(
    name: str, url: str, path: str, destination: str, *, automated: bool, retry: Any = None
) -> dict[str, Any]:
    """An Application as docs/argocd.md sets one up: automated sync off (``enabled: false``
    keeping ``prune``) unless ``automated``; the folder read with its subfolders."""
    policy: dict[str, Any] = {
        "automated": {"prune": True} if automated else {"enabled": False, "prune": True},
        "syncOptions": ["ServerSideApply=true"],
    }
    if retry is not None:
        policy["retry"] = retry
    source = {"repoURL": url, "targetRevision": "main", "path": path}
    return {
        "apiVersion": f"{APPS[0]}/{APPS[1]}",
        "kind": "Application",
        "metadata": {"name": name, "namespace": ARGO_NS},
        "spec": {
            "project": "default",
            "source": {**source, "directory": {"recurse": True}},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": destination},
            "syncPolicy": policy,
        },
    }


def initiator(operation: dict[str, Any] | None) -> dict[str, Any]:
    """``initiatedBy`` of an operation, or {}."""
    return dict((operation or {}).get("initiatedBy") or {})


class AppRecorder:
    """Every version of one Application from its creation on, read by a watch in a thread."""

    def __init__(self, system: System, name: str, since: str) -> None:
        self._system = system
        self._name = name
        self._since = since
        self._versions: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"record-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    self._system.custom.list_namespaced_custom_object,
                    *APPS[:2],
                    ARGO_NS,
                    APPS[2],
                    field_selector=f"metadata.name={self._name}",
                    resource_version=self._since,
                    timeout_seconds=1,
                )
                for event in stream:
                    obj = event["raw_object"]
                    self._since = str(obj.get("metadata", {}).get("resourceVersion", self._since))
                    if event["type"] in ("ADDED", "MODIFIED"):
                        with self._lock:
                            self._versions.append(obj)
            except ApiException as err:  # a 410 would lose versions: the test must fail
                self.error = f"the watch of {self._name} ended: {err.status} {err.reason}"
                return
            except Exception as err:  # the server stopping at the module's end
                if not self._stop.is_set():
                    self.error = f"the watch of {self._name} failed: {err!r}"
                return

    def versions(self) -> list[dict[str, Any]]:
        """Every version seen so far, oldest first."""
        assert self.error is None, self.error
        with self._lock:
            return list(self._versions)

    def operations(self) -> list[dict[str, Any]]:
        """Every distinct operation ever set (``operation``), in the order first seen."""
        found: list[dict[str, Any]] = []
        for version in self.versions():
            operation = version.get("operation")
            if operation and operation not in found:
                found.append(operation)
        return found

    def ours(self) -> list[dict[str, Any]]:
        """The operations the product set (``initiatedBy.username`` is ours)."""
        return [op for op in self.operations() if initiator(op).get("username") == OURS]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class ArgoTenant(ApplierTenant):
    """A GitTarget ``target`` naming the Application ``argocd/<app_name>`` (automated sync off
    unless made otherwise), with the recorder of that Application."""

    def __init__(
        self, tenant: Tenant, uid: str, app_name: str, recorder: AppRecorder, target: str = "gt"
    ) -> None:
        super().__init__(tenant, uid)
        self.app_name = app_name
        self.recorder = recorder
        self.target = target

    @property
    def applier(self) -> ApplierRef:
        return ApplierRef("Application", ARGO_NS, self.app_name, "default")

    @property
    def argo(self) -> ArgoCDController:
        """The sandbox's Argo CD double."""
        controller = self.system.sbx.argocd
        assert controller is not None, "the sandbox runs without its Argo CD double"
        return controller

    def app(self) -> dict[str, Any]:
        return self.system.get(*APPS[:2], ARGO_NS, APPS[2], self.app_name)

    def operation_state(self) -> dict[str, Any]:
        """``status.operationState`` of the Application, or {}."""
        return dict((self.app().get("status") or {}).get("operationState") or {})

    def synced(self, commit: str) -> bool:
        """The last operation finished a sync of ``commit`` (A2: ``syncResult.revision``)."""
        state = self.operation_state()
        revision = (state.get("syncResult") or {}).get("revision")
        return state.get("phase") == "Succeeded" and revision == commit

    def settled(self) -> bool:
        """Nothing is owed to the Application or out for it, and every request has its
        outcome."""
        owed = self.obligations()
        return not owed.owes() and owed.attempt is None and all(s.outcome for s in self.requests())


class ArgoTenants(FluxTenants):
    """Makes tenants with an Argo CD applier, as docs/argocd.md sets one up."""

    def __init__(self, system: System, client: Any) -> None:
        super().__init__(system, client)
        self._recorders: list[AppRecorder] = []
        # The Applications live in argocd, not in the tenants' namespaces: the platform
        # admin allows them in ClusterProvider default (T2, docs/argocd.md's example).
        allowance = [{"namespace": ARGO_NS, "accessFrom": {"selector": {}}}]
        system.custom.patch_cluster_custom_object(
            GROUP,
            "v1alpha1",
            "clusterproviders",
            "default",
            {"spec": {"crossNamespaceAppliers": allowance}},
        )

    def make_argo(
        self,
        name: str,
        *,
        on_refusal: str = "None",
        rules: list[dict[str, Any]] | None = None,
        files: dict[str, str] | None = None,
        automated: bool = False,
        retry: Any = None,
    ) -> ArgoTenant:
        """A tenant with a GitHub receiver whose hook the Git host calls, its GitTarget naming
        the Application ``argocd/<name>`` that syncs ``clusters/<name>`` into namespace
        ``name``. Returns once a worker owns the branch and (automated sync off)
        ApplierConfigured is True."""
        applier = {"applicationRef": {"name": name, "namespace": ARGO_NS}}
        made: list[AppRecorder] = []

        def argo_first(url: str) -> None:
            path = f"clusters/{name}"
            body = application(name, url, path, name, automated=automated, retry=retry)
            made.append(self._app(body, synced_at=None if automated else self.system.tip(name)))

        tenant = self.make(
            name,
            rules=rules or [CONFIGMAPS],
            receiver={"type": "github", "secretRef": {"name": "webhook"}},
            target_spec={"onRefusal": on_refusal, "applier": applier},
            files={
                "README.md": b"e2e\n",
                f"clusters/{name}/README.md": b"The folder of GitTarget gt.\n",
                **{p: t.encode() for p, t in (files or {}).items()},
            },
            before_target=argo_first,
        )
        self.secret(name, "webhook", {"token": WEBHOOK_TOKEN})
        argo = ArgoTenant(tenant, str(tenant.target()["metadata"]["uid"]), name, made[0])
        tenant.wait_owned()
        self._hook(tenant)
        if not automated:
            tenant.wait_condition("ApplierConfigured", "True")
        return argo

    def add_application(self, flux: FluxTenant, name: str, rule: dict[str, Any]) -> ArgoTenant:
        """Another GitTarget (and WatchRule) ``name`` on ``clusters/<ns>-<name>`` of a Flux
        tenant's branch, naming the Application ``argocd/<ns>-<name>`` that syncs that folder."""
        ns, app_name = flux.ns, f"{flux.ns}-{name}"
        applier = {"applicationRef": {"name": app_name, "namespace": ARGO_NS}}
        path = f"clusters/{app_name}"
        spec = {"providerRef": {"name": "gp"}, "branch": "main", "applier": applier}
        self._create(ns, "GitTarget", name, {**spec, "path": path})
        self._create(ns, "WatchRule", name, {"targetRef": {"name": name}, "rules": [rule]})
        body = application(app_name, flux.tenant.url, path, ns, automated=False)
        uid = str(self.system.get(GROUP, "v1alpha1", ns, "gittargets", name)["metadata"]["uid"])
        return ArgoTenant(flux.tenant, uid, app_name, self._app(body), target=name)

    def _app(self, body: dict[str, Any], synced_at: str | None = None) -> AppRecorder:
        """Create the Application and record it from then on; with ``synced_at``, first sync
        it at that commit as an admin would (``argocd app sync``), and record from after that
        sync: an install whose Application holds the tip, so the branch's first owner owes it
        nothing (issue 23, finding 12) and each test counts only the operations it causes."""
        created = self.system.custom.create_namespaced_custom_object(
            *APPS[:2], ARGO_NS, APPS[2], body
        )
        meta = dict(created)["metadata"]
        if synced_at is not None:
            meta = self._synced(str(meta["name"]), synced_at)["metadata"]
        recorder = AppRecorder(self.system, str(meta["name"]), str(meta["resourceVersion"]))
        self._recorders.append(recorder)
        return recorder

    def _synced(self, name: str, commit: str) -> dict[str, Any]:
        """Sync the Application ``name`` at ``commit`` as an admin; the Application after."""
        operation = {"sync": {"revision": commit}, "initiatedBy": {"username": "admin"}}
        self.system.custom.patch_namespaced_custom_object(
            *APPS[:2], ARGO_NS, APPS[2], name, {"operation": operation}
        )

        def done() -> dict[str, Any] | None:
            app = self.system.get(*APPS[:2], ARGO_NS, APPS[2], name)
            state = (app.get("status") or {}).get("operationState") or {}
            synced = (state.get("syncResult") or {}).get("revision") == commit
            return app if state.get("phase") == "Succeeded" and synced else None

        wait_until(lambda: done() is not None, WAIT_S, f"the admin's first sync of {name}")
        found = done()
        assert found is not None
        return found

    def close(self) -> None:
        """Stop every recorder."""
        for recorder in self._recorders:
            recorder.stop()
