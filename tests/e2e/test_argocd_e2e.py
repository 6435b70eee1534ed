"""The Argo CD applier with every process running (issue 10 section 4: S2, A1-A5, D5, D6, O4).

One system runs for the module (``ARGO_SETTINGS``) with the sandbox's Argo CD double and the
API server double's access rules on: the product's identity has exactly get and update on
``applications.argoproj.io`` in ``argocd`` (``tests/e2e/argo_support.py``). Each test makes its
own tenant: a namespace and repository, a GitTarget naming an Application with automated sync
off, as docs/argocd.md sets it up. Requests are read from the apply queue (one rq job per
token, D1); what Argo CD did from the Application (its status, and every version a watch
recorded) and from the double's activity log. The double follows ../shared/facts/appliers.md
A2 (operations consumed and cleared, autosync), A3 (retries), A5 (apply as
``argocd-controller`` with the tracking annotation).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kubernetes import client

from sandbox.argocd import AUTO_SYNC, FINISHED, RETRY_WAIT, STARTED
from sandbox.webhook_sink import WebhookSink
from shared.model.config import ApplierRef
from tests.e2e.argo_support import (
    ARGO_NS,
    ARGO_SETTINGS,
    OURS,
    ArgoTenant,
    ArgoTenants,
    identities,
    initiator,
)
from tests.e2e.conftest import CONFIGMAPS, WAIT_S, WEBHOOK_TOKEN, ApplierTenant, Launcher
from tests.e2e.system import GROUP, System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

SECRETS: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"]}
SERVICE_ACCOUNTS: dict[str, Any] = {"apiGroups": [""], "resources": ["serviceaccounts"]}
TRACKING = "argocd.argoproj.io/tracking-id"
BROKEN = "apiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n"


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    started = launcher.start(identities(), **ARGO_SETTINGS)
    started.namespace(ARGO_NS)
    return started


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> Iterator[ArgoTenants]:
    made = ArgoTenants(system, e2e_redis)
    yield made
    made.close()


def configmap(argo: ApplierTenant, folder: str, name: str, value: str) -> tuple[str, str]:
    """A ConfigMap's path in ``folder`` (M4) and its document as we render it (M2), so the
    object Argo CD makes from it mirrors to the same bytes (M3: no write)."""
    text = "\n".join(
        [
            "apiVersion: v1",
            "kind: ConfigMap",
            "metadata:",
            f"  name: {name}",
            f"  namespace: {argo.ns}",
            "data:",
            f"  value: {value}",
            "",
        ]
    )
    return f"{folder}/{argo.ns}/configmaps/{name}.yaml", text


def finished(argo: ApplierTenant, count: int) -> bool:
    """``count`` requests were sent and each has its outcome."""
    sent = argo.requests()
    return len(sent) == count and all(s.outcome for s in sent)


def mirrored(argo: ApplierTenant, events: int) -> bool:
    """The owner read ``events`` events or more, no commit window is open, and no write is
    pending or being pushed."""
    state = argo.tenant.state()
    return (
        argo.events_handled() >= events
        and state.windows_open == 0
        and state.pending_total == 0
        and not state.push_in_flight
    )


def quiet(argo: ApplierTenant, events: int) -> bool:
    """``mirrored``, and nothing is owed to the applier or out for it."""
    owed = argo.obligations()
    return (
        mirrored(argo, events)
        and not owed.owes()
        and owed.attempt is None
        and all(s.outcome for s in argo.requests())
    )


def token_of(operation: dict[str, Any]) -> str:
    info = {i["name"]: i["value"] for i in operation.get("info") or []}
    return str(info.get("gitops-reverser/token", ""))


def argo_records(argo: ArgoTenant, mark: int, *actions: str) -> list[Any]:
    """The double's records about this tenant's Application since ``mark``."""
    return [
        r
        for r in argo.argo.log.records(mark)
        if r.is_for("Application", ARGO_NS, argo.app_name) and (not actions or r.action in actions)
    ]


def test_outside_push_is_synced_by_one_pinned_operation_and_nothing_else_moves(
    tenants: ArgoTenants,
) -> None:
    """R4, Q5, A1, A2, D5, D6, M3: a push from elsewhere reaches the receiver; one
    ForeignCommit request sets one operation, pinned to that commit, initiated by us with the
    request's token; Argo CD syncs exactly that commit. The ConfigMap it creates carries Argo
    CD's bookkeeping (the tracking annotation, managedFields of ``argocd-controller``, A5),
    and mirrors to the bytes in Git: no commit follows."""
    argo = tenants.make_argo("e2e-argo-foreign")
    path, text = configmap(argo, argo.tenant.path, "from-git", "hello")
    before = argo.events_handled()
    assert before >= 0
    commit = argo.push({path: text})
    wait_until(lambda: argo.synced(commit), WAIT_S, "Argo CD to sync the outside commit")
    wait_until(lambda: finished(argo, 1), WAIT_S, "the request's outcome")
    [request] = argo.requests()
    assert (request.commit, request.reasons) == (commit, {"ForeignCommit": [argo.uid]})
    assert request.outcome == "Delivered"
    operation = argo.operation_state()["operation"]
    assert operation["sync"]["revision"] == commit
    assert initiator(operation) == {"username": OURS, "automated": True}
    assert token_of(operation) == request.token
    assert argo.recorder.operations() == [operation]
    made = argo.system.core.read_namespaced_config_map("from-git", argo.ns)
    assert made.data == {"value": "hello"}
    assert TRACKING in (made.metadata.annotations or {})
    assert "argocd-controller" in {f.manager for f in made.metadata.managed_fields or []}
    wait_until(lambda: quiet(argo, before + 1), WAIT_S, "the ConfigMap Argo CD made, mirrored")
    assert argo.tenant.tip() == commit
    assert argo.notices() == [commit]
    deliveries = argo.system.sbx.githost.wait_for_deliveries(1, WAIT_S, argo.tenant.repo)
    assert [d.status for d in deliveries] == [202]
    wait_until(
        lambda: argo.last_request().get("token") == request.token, WAIT_S, "lastRequest (O6)"
    )
    assert "Succeeded" in argo.last_request()["message"]


def test_two_quick_api_edits_are_mirrored_and_no_sync_is_asked(tenants: ArgoTenants) -> None:
    """M6, A1: two API edits of one ConfigMap in quick succession; the later value stays in
    the cluster and is the one in Git; every commit after them is the mirror's (only that
    file), and the Application is asked nothing: no CatchUp for an Application, no operation
    set, nothing started by the double."""
    argo = tenants.make_argo("e2e-argo-edits")
    base = argo.tenant.tip()
    mark = argo.argo.log.mark()
    handled = argo.events_handled()
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="edited"), data={"value": "1"})
    argo.system.core.create_namespaced_config_map(argo.ns, body)
    argo.system.core.patch_namespaced_config_map("edited", argo.ns, {"data": {"value": "2"}})
    path = f"{argo.tenant.path}/{argo.ns}/configmaps/edited.yaml"
    wait_until(lambda: quiet(argo, handled + 2), WAIT_S, "both edits mirrored")
    commits = argo.tenant.commits_since(base)
    assert commits and all(argo.tenant.changed_objects(c) == [path] for c in commits)
    assert "value: '2'" in argo.tenant.show(path) or 'value: "2"' in argo.tenant.show(path)
    assert argo.system.core.read_namespaced_config_map("edited", argo.ns).data == {"value": "2"}
    assert argo.requests() == []
    assert argo.obligations().owes() == {}
    assert argo.recorder.operations() == []
    assert argo_records(argo, mark, STARTED, AUTO_SYNC) == []


def _secret_manifest(ns: str, value: str) -> str:
    encoded = base64.b64encode(value.encode()).decode()
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n"
        f"  namespace: {ns}\ntype: Opaque\ndata:\n  password: {encoded}\n"
    )


def _password(argo: ArgoTenant) -> str:
    secret = argo.system.core.read_namespaced_secret("token", argo.ns)
    return base64.b64decode((secret.data or {})["password"]).decode()


def _refusing(tenants: ArgoTenants, name: str, on_refusal: str) -> ArgoTenant:
    """A tenant whose folder holds a Secret and whose WatchRule selects Secrets; an outside
    push has been synced (so Argo CD created the Secret) and everything has settled."""
    folder = f"clusters/{name}/{name}/secrets/token.yaml"
    argo = tenants.make_argo(
        name,
        on_refusal=on_refusal,
        rules=[CONFIGMAPS, SECRETS],
        files={folder: _secret_manifest(name, "from-git")},
    )
    path, text = configmap(argo, argo.tenant.path, "first", "synced")
    commit = argo.push({path: text})
    wait_until(lambda: argo.synced(commit), WAIT_S, f"{name}'s first sync")
    assert _password(argo) == "from-git"
    wait_until(lambda: quiet(argo, 2), WAIT_S, f"{name} to settle")
    return argo


def test_a_refused_edit_is_reverted_by_a_refusal_sync_only_with_consent(
    tenants: ArgoTenants,
) -> None:
    """M10, A5, S1, D5, S4: an API edit of a Secret is refused (never written to Git); with
    ``onRefusal: Reapply`` a Refusal request sets an operation and Argo CD's sync takes the
    field back (server-side apply with force as ``argocd-controller``, appliers.md A5), and
    the GitTarget's ApplyRequested Event names Refusal. The same edit in a tenant without
    consent is not reverted, asks nothing, and the double starts no operation for it."""
    consenting = _refusing(tenants, "e2e-argo-reapply", "Reapply")
    refusing = _refusing(tenants, "e2e-argo-norefuse", "None")
    mark = refusing.argo.log.mark()
    asked = (len(consenting.requests()), len(refusing.requests()))
    handled = refusing.events_handled()
    tips = (consenting.tenant.tip(), refusing.tenant.tip())
    for argo in (consenting, refusing):
        edited = base64.b64encode(b"edited").decode()
        argo.system.core.patch_namespaced_secret("token", argo.ns, {"data": {"password": edited}})
    wait_until(lambda: _password(consenting) == "from-git", WAIT_S, "the Refusal to revert")
    wait_until(lambda: quiet(consenting, 0), WAIT_S, "the Refusal's outcome")
    refusals = consenting.requests()[asked[0] :]
    assert refusals and all(r.outcome == "Delivered" for r in refusals)
    assert {tuple(r.reasons) for r in refusals} == {("Refusal",)}
    ours = {token_of(op) for op in consenting.recorder.ours()}
    assert {r.token for r in refusals} <= ours
    assert any(m.startswith("Refusal at ") for _, m in consenting.events())
    assert (consenting.tenant.condition("GitPathAccepted") or {}).get("status") == "False"
    wait_until(lambda: refusing.events_handled() > handled, WAIT_S, "the edit to be refused")
    wait_until(lambda: quiet(refusing, handled + 1), WAIT_S, "the refusing tenant to settle")
    assert _password(refusing) == "edited"
    assert len(refusing.requests()) == asked[1] and not refusing.obligations().refusals
    assert argo_records(refusing, mark, STARTED, AUTO_SYNC) == []
    assert (refusing.tenant.condition("GitPathAccepted") or {}).get("status") == "False"
    assert (consenting.tenant.tip(), refusing.tenant.tip()) == tips


def test_automated_sync_stalls_the_git_target_and_we_never_set_an_operation(
    tenants: ArgoTenants,
) -> None:
    """S2, D5: with automated sync on, ApplierConfigured is False with AutomatedSyncEnabled and
    the GitTarget stalls. An outside push is synced by Argo CD's own autosync once a refresh
    (Argo CD's Git webhook, A4) finds it: its operation is initiated automated with no
    username (A2). The ForeignCommit owed to it is asked, but the attempt reads the check's
    rule and fails with AutomatedSyncEnabled: the product never sets an operation."""
    argo = tenants.make_argo("e2e-argo-auto", automated=True)
    configured = argo.tenant.wait_condition("ApplierConfigured", "False")
    assert configured["reason"] == "AutomatedSyncEnabled"
    assert argo.tenant.wait_condition("Stalled", "True")["reason"] == "AutomatedSyncEnabled"
    mark = argo.argo.log.mark()
    base = argo.tenant.tip()
    path, text = configmap(argo, argo.tenant.path, "auto", "synced")
    commit = argo.push({path: text})
    wait_until(lambda: argo.tenant.state().observed_tip == commit, WAIT_S, "the push noticed")
    argo.system.custom.patch_namespaced_custom_object(
        "argoproj.io",
        "v1alpha1",
        ARGO_NS,
        "applications",
        argo.app_name,
        {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}},
    )
    wait_until(lambda: argo.synced(commit), WAIT_S, "Argo CD's autosync of the push")
    assert [r.revision for r in argo_records(argo, mark, AUTO_SYNC)] == [commit]
    handled = argo.events_handled()
    wait_until(lambda: mirrored(argo, max(handled, 1)), WAIT_S, "the ConfigMap mirrored")
    operation = argo.operation_state()["operation"]
    assert initiator(operation) == {"automated": True}
    assert [initiator(op) for op in argo.recorder.operations()] == [{"automated": True}]
    assert argo.recorder.ours() == []
    wait_until(
        lambda: (
            any(r.commit == commit for r in argo.requests())
            and all(r.outcome for r in argo.requests())
        ),
        WAIT_S,
        "the ForeignCommit's request to end",
    )
    # the attempt reads the check's rule and refuses (D5); the first start may have owed the
    # tip it found too, if it ran before autosync's first sync finished (issue 23, finding 12)
    for request in argo.requests():
        assert (request.commit in (base, commit), request.outcome) == (True, "Failed")
    assert argo.requests()[-1].commit == commit
    wait_until(lambda: bool(argo.last_request()), WAIT_S, "status.applier.lastRequest")
    assert argo.last_request()["message"].startswith("AutomatedSyncEnabled")
    assert argo.recorder.ours() == []
    assert argo.tenant.tip() == commit
    assert (argo.tenant.condition("Stalled") or {}).get("status") == "True"


def test_a_running_operation_is_waited_out_and_never_replaced(tenants: ArgoTenants) -> None:
    """D5, A2: someone's sync is running (held by the double's pacing gate) when an outside
    push comes; the request goes out while it runs, sets nothing until that operation
    finished, and then sets its own: the other operation ran to Succeeded, ours followed.
    (A 409 on the update, read again and decided again, is tests/integration/dispatcher/
    test_argo_attempts.py's: the API double cannot be made to lose that race on demand.)"""
    argo = tenants.make_argo("e2e-argo-held")
    gate = argo.argo.pacing.gate
    base = argo.tenant.tip()
    manual = {"sync": {"revision": base}, "initiatedBy": {"username": "admin"}}
    mark = argo.argo.log.mark()  # after the install's own sync (make_argo)
    gate.clear()
    try:
        argo.system.custom.patch_namespaced_custom_object(
            "argoproj.io",
            "v1alpha1",
            ARGO_NS,
            "applications",
            argo.app_name,
            {"operation": manual},
        )
        wait_until(lambda: argo.operation_state().get("phase") == "Running", WAIT_S, "admin's sync")
        path, text = configmap(argo, argo.tenant.path, "held", "later")
        commit = argo.push({path: text})
        wait_until(lambda: len(argo.requests()) == 1, WAIT_S, "the request")
        wait_until(lambda: argo.obligations().attempt is not None, WAIT_S, "the attempt out")
        assert initiator(argo.app()["operation"]) == {"username": "admin"}
        assert argo.recorder.ours() == []
    finally:
        gate.set()
    wait_until(lambda: argo.synced(commit), WAIT_S, "our sync after admin's")
    wait_until(lambda: finished(argo, 1), WAIT_S, "the request's outcome")
    [request] = argo.requests()
    assert (request.commit, request.outcome) == (commit, "Delivered")
    history = argo.app()["status"]["history"]  # after the install's own sync (make_argo)
    assert [(h["revision"], initiator(h)) for h in history][-2:] == [
        (base, {"username": "admin"}),
        (commit, {"username": OURS, "automated": True}),
    ]
    versions = argo.recorder.versions()
    first_ours = next(
        i for i, v in enumerate(versions) if initiator(v.get("operation")).get("username") == OURS
    )
    admin_done = [
        i
        for i, v in enumerate(versions)
        if ((v.get("status") or {}).get("operationState") or {}).get("phase") == "Succeeded"
    ]
    assert admin_done and admin_done[0] < first_ours
    admin_finished = argo_records(argo, mark, FINISHED)[0]
    assert request.sent_at < admin_finished.time


def test_a_failed_sync_is_delivered_only_once_its_retries_are_spent(
    tenants: ArgoTenants,
) -> None:
    """D6, A3: a sync of a folder holding an object the cluster cannot take fails with one
    retry left: the operation is Running with finishedAt for the backoff (3s x 2^1), then
    Failed. The request is Delivered only after the Failed phase, and the ledger says Failed."""
    retry = {"limit": 1, "backoff": {"duration": "3s", "factor": 2}}
    argo = tenants.make_argo("e2e-argo-retry", retry=retry)
    mark = argo.argo.log.mark()
    commit = argo.push({f"{argo.tenant.path}/broken.yaml": BROKEN})
    wait_until(lambda: finished(argo, 1), 2 * WAIT_S, "the request's outcome")
    [request] = argo.requests()
    assert (request.commit, request.outcome) == (commit, "Delivered")
    [waiting] = argo_records(argo, mark, RETRY_WAIT)
    [done] = argo_records(argo, mark, FINISHED)
    assert done.message == "Failed" and waiting.time < done.time
    assert request.ended_at is not None and request.ended_at >= done.time
    state = argo.operation_state()
    assert state["phase"] == "Failed" and token_of(state["operation"]) == request.token
    wait_until(
        lambda: argo.last_request().get("token") == request.token, WAIT_S, "lastRequest (O6)"
    )
    assert argo.last_request()["outcome"] == "Delivered"
    assert "Failed" in argo.last_request()["message"]


def test_a_kustomization_and_an_application_on_one_branch_each_get_what_they_are_owed(
    tenants: ArgoTenants,
) -> None:
    """A1, A2: one branch, two GitTargets: ``gt`` names a Kustomization, ``argo`` an
    Application. API edits in both folders owe the Kustomization its CatchUp and the
    Application nothing; an outside push is a ForeignCommit for each, and the Application
    syncs it."""
    readme = {"clusters/e2e-argo-mixed-argo/README.md": "The folder of GitTarget argo.\n"}
    flux = tenants.make_flux("e2e-argo-mixed", quiet="2s", files=readme)
    argo = tenants.add_application(flux, "argo", SERVICE_ACCOUNTS)

    def argo_configured() -> bool:
        found = flux.system.get(GROUP, "v1alpha1", flux.ns, "gittargets", "argo")
        conditions = found.get("status", {}).get("conditions", [])
        return any(c["type"] == "ApplierConfigured" and c["status"] == "True" for c in conditions)

    wait_until(argo_configured, WAIT_S, "the Application's GitTarget configured")
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="edited"), data={"v": "1"})
    flux.system.core.create_namespaced_config_map(flux.ns, body)
    flux.system.core.create_namespaced_service_account(
        flux.ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot"))
    )

    def both_pushed() -> bool:
        files = flux.tenant.files()
        return f"clusters/{argo.app_name}/{flux.ns}/serviceaccounts/robot.yaml" in files and (
            f"{flux.tenant.path}/{flux.ns}/configmaps/edited.yaml" in files
        )

    wait_until(both_pushed, WAIT_S, "both writes pushed")
    wait_until(lambda: finished(flux, 1), WAIT_S, "the Kustomization's CatchUp")
    [catch_up] = flux.requests()
    assert (catch_up.reasons, catch_up.outcome) == ({"CatchUp": [flux.uid]}, "Delivered")
    assert catch_up.commit == flux.tenant.tip()
    wait_until(lambda: quiet(argo, 2), WAIT_S, "the Application's record settled")
    assert argo.requests() == [] and argo.recorder.operations() == []
    path, text = configmap(argo, f"clusters/{argo.app_name}", "pushed", "both")
    commit = flux.push({path: text})
    # Flux applies ./clusters, so it also creates the pushed ConfigMap, which gt mirrors into
    # its own folder: that write makes a request decided before it Stale (D3), and it is
    # decided again at the new tip. Each applier ends with a delivered ForeignCommit.

    def delivered(tenant: ApplierTenant) -> bool:
        sent = tenant.requests()
        return bool(sent) and sent[-1].outcome == "Delivered" and quiet(tenant, 0)

    wait_until(lambda: delivered(flux) and delivered(argo), WAIT_S, "both ForeignCommits")
    later = flux.requests()[1:]
    assert any(r.outcome == "Delivered" and "ForeignCommit" in r.reasons for r in later)
    *stale, last = argo.requests()
    assert all(r.outcome == "Stale" for r in stale)
    assert last.reasons == {"ForeignCommit": [argo.uid]} and last.commit in (
        commit,
        *flux.tenant.commits_since(commit),
    )
    assert argo.synced(last.commit), argo.operation_state()
    assert all("CatchUp" not in r.reasons for r in argo.requests())


HMAC_KEY = "e2e-hook-key"


class WebhookTenant(ApplierTenant):
    """A tenant whose GitTarget names a webhook applier (D7); its name is the product's."""

    @property
    def applier(self) -> ApplierRef:
        status = self.applier_status()
        return ApplierRef("Webhook", self.ns, str(status.get("name", "")), "default")


def test_the_webhook_applier_gets_one_signed_post_for_an_outside_push_and_none_for_ours(
    tenants: ArgoTenants,
) -> None:
    """D7, A1: a GitTarget whose applier is a webhook: a webhook records nothing applied, so
    the branch's first start POSTs one ForeignCommit for the tip it finds (issue 23, finding 12);
    our own push (an API edit mirrored) owes it nothing and nothing more is POSTed; an
    outside push is one ForeignCommit POST, whose signature the sink verifies by the rule
    docs/crds.md publishes."""
    sink = WebhookSink(HMAC_KEY.encode()).start()
    try:
        name = "e2e-hook-applier"
        hook = {"url": f"{sink.url}/deploy", "secretRef": {"name": "deploy-hook"}, "timeout": "5s"}
        tenant = tenants.make(
            name,
            rules=[CONFIGMAPS],
            receiver={"type": "github", "secretRef": {"name": "webhook"}},
            target_spec={"applier": {"webhook": hook}},
        )
        tenants.secret(name, "webhook", {"token": WEBHOOK_TOKEN})
        tenants.secret(name, "deploy-hook", {"hmacKey": HMAC_KEY})
        target = WebhookTenant(tenant, str(tenant.target()["metadata"]["uid"]))
        tenant.wait_owned()
        tenants._hook(tenant)
        tenant.wait_condition("ApplierConfigured", "True")
        wait_until(lambda: bool(target.applier_status().get("name")), WAIT_S, "status.applier")
        base = tenant.tip()
        [installed] = sink.wait_for(1, WAIT_S)  # the first start's ForeignCommit
        assert (installed.json()["commit"], installed.json()["reasons"]) == (
            base,
            {"ForeignCommit": [target.uid]},
        )
        wait_until(lambda: quiet(target, 0), WAIT_S, "the first start's POST delivered")
        asked = len(target.requests())  # one, or more if the hook's Secret came late
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="edited"), data={"v": "1"})
        tenant.system.core.create_namespaced_config_map(name, body)
        tenant.wait_tip_moved(base)
        wait_until(lambda: quiet(target, 1), WAIT_S, "our push mirrored, nothing owed")
        assert len(sink.deliveries()) == 1 and len(target.requests()) == asked
        path, text = configmap(target, tenant.path, "from-git", "pushed")
        commit = target.push({path: text})
        [_, delivery] = sink.wait_for(2, WAIT_S)
        wait_until(lambda: finished(target, asked + 1), WAIT_S, "the POST's outcome")
        request = target.requests()[-1]
        assert (request.commit, request.reasons) == (commit, {"ForeignCommit": [target.uid]})
        assert request.outcome == "Delivered"
        assert delivery.verified and delivery.path == "/deploy"
        sent = delivery.json()
        assert (sent["commit"], sent["token"]) == (commit, request.token)
        assert sent["reasons"] == {"ForeignCommit": [target.uid]}
        wait_until(lambda: quiet(target, 1), WAIT_S, "nothing more owed")
        assert len(sink.deliveries()) == 2
    finally:
        sink.stop()
