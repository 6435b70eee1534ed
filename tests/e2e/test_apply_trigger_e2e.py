"""The apply trigger with every process running (issue 5: Q2-Q7, A1-A5, S1-S4, D1-D4, D6).

One system runs for the module (``FLUX_SETTINGS``: steady tick 4s, reconcile 1s, attempts
handed back after 10s) with the sandbox's Flux doubles. Each test makes its own tenant: a
namespace and repository, a GitTarget whose applier is a Kustomization, and Flux's
GitRepository (interval 24h) and Kustomization, as docs/flux.md sets them up. Requests are
read from the apply queue (one rq job per token, D1), Flux's side from the objects' status
and the API's watch history, Git's from the Git host's bare repository.
"""

from __future__ import annotations

import base64
from itertools import pairwise
from typing import Any

import pytest
from kubernetes import client

from shared.kube.flux import REQUESTED_AT
from shared.model.ids import GitTargetUid
from tests.e2e.conftest import (
    CONFIGMAPS,
    VERSION,
    WAIT_S,
    FluxTenant,
    FluxTenants,
    kill_process,
    start_process,
    stop_process,
)
from tests.e2e.system import GROUP
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

SECRETS: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"]}
SERVICE_ACCOUNTS: dict[str, Any] = {"apiGroups": [""], "resources": ["serviceaccounts"]}


def configmap(flux: FluxTenant, name: str, data: dict[str, str]) -> tuple[str, str]:
    """A ConfigMap's path in the GitTarget's folder (M4) and its document as we render it (M2),
    so that the API object Flux makes from it mirrors to the same bytes (M3: no write)."""
    lines = [f"  {k}: {v}" for k, v in data.items()]
    text = "\n".join(
        [
            "apiVersion: v1",
            "kind: ConfigMap",
            "metadata:",
            f"  name: {name}",
            f"  namespace: {flux.ns}",
            "data:",
            *lines,
            "",
        ]
    )
    return f"{flux.tenant.path}/{flux.ns}/configmaps/{name}.yaml", text


def finished(flux: FluxTenant, count: int) -> bool:
    """``count`` requests were sent and each has its outcome."""
    sent = flux.requests()
    return len(sent) == count and all(s.outcome for s in sent)


def test_outside_push_with_a_receiver_is_applied_once_and_nothing_else_moves(
    tenants: FluxTenants,
) -> None:
    """R4, Q5, A1, A2, D4, D6, M3: a push from elsewhere reaches the receiver as a notice, the
    worker reads the tip and owes a ForeignCommit; one request stamps the GitRepository
    (its artifact lacks the commit) and nothing else, and Flux applies that commit; the
    ConfigMap Flux creates mirrors to the same bytes, so we push nothing after it.

    Flux doubles (../shared/facts/appliers.md): a new requestedAt wakes the GitRepository
    (F1), whose new artifact revision ``main@sha1:<sha>`` wakes the Kustomization (F2), which
    records it as ``lastAppliedRevision`` once applied (F3)."""
    flux = tenants.make_flux("e2e-foreign-hook")
    path, text = configmap(flux, "from-git", {"greeting": "hello"})
    before = flux.events_handled()
    assert before >= 0
    since = flux.resource_version()
    commit = flux.push({path: text})
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux to apply the outside commit")
    made = flux.system.core.read_namespaced_config_map("from-git", flux.ns)
    assert made.data == {"greeting": "hello"}
    wait_until(
        lambda: flux.events_handled() > before, WAIT_S, "the ConfigMap Flux made to be mirrored"
    )
    wait_until(lambda: finished(flux, 1), WAIT_S, "the request's outcome")
    [request] = flux.requests()
    assert (request.commit, request.reasons) == (commit, {"ForeignCommit": [flux.uid]})
    assert request.outcome == "Delivered"
    assert set(flux.stamps(since)) == {("GitRepository", request.token)}
    deliveries = flux.system.sbx.githost.wait_for_deliveries(1, WAIT_S, flux.tenant.repo)
    assert [d.status for d in deliveries] == [202]
    assert flux.notices() == [commit]
    assert flux.tenant.tip() == commit


def test_outside_push_without_a_receiver_is_found_on_the_steady_tick(
    tenants: FluxTenants,
) -> None:
    """Q7, Q5, A2, D4: with no webhook at all, the idle branch reads its tip on the steady tick
    (4s here), finds the outside push and Flux applies it through one ForeignCommit.
    Flux doubles: appliers.md F1-F3, as in the test above."""
    flux = tenants.make_flux("e2e-foreign-tick", receiver=False)
    path, text = configmap(flux, "from-git", {"greeting": "ticked"})
    commit = flux.push({path: text})
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux to apply the outside commit")
    assert flux.system.core.read_namespaced_config_map("from-git", flux.ns).data == {
        "greeting": "ticked"
    }
    wait_until(lambda: finished(flux, 1), WAIT_S, "the request's outcome")
    [request] = flux.requests()
    assert (request.commit, request.reasons) == (commit, {"ForeignCommit": [flux.uid]})
    assert request.outcome == "Delivered"
    assert flux.system.sbx.githost.deliveries(flux.tenant.repo) == []


def _create(flux: FluxTenant, name: str, data: dict[str, str]) -> None:
    """An API edit: someone creates a ConfigMap with kubectl."""
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)
    flux.system.core.create_namespaced_config_map(flux.ns, body)


def _last_write_at(flux: FluxTenant) -> float:
    return flux.tenant.state().last_write_at


def test_an_api_edit_is_caught_up_a_quiet_period_after_the_last_write_and_never_reverted(
    tenants: FluxTenants,
) -> None:
    """M6, Q2, A1, A2, D4, D6: the edit is committed and pushed; a CatchUp is sent
    quietPeriod (3s) after the last write and stamps the GitRepository, whose artifact then
    holds our commit; every apply Flux made after the edit is of that commit, so the edit is
    never reverted; the ApplyRequested Event names the CatchUp and the ledger shows it (S3,
    S4, O6). Flux doubles: artifact revisions and lastAppliedRevision as appliers.md F2, F3
    say; a Kustomization applies only when woken (F2: a new revision; F3: its interval)."""
    flux = tenants.make_flux("e2e-catch-up", quiet="3s")
    base = flux.tenant.tip()
    mark = flux.flux_log.mark()
    _create(flux, "edited", {"value": "from-the-api"})
    ours = flux.tenant.wait_tip_moved(base)
    assert f"{flux.tenant.path}/{flux.ns}/configmaps/edited.yaml" in flux.tenant.changed(ours)
    wait_until(lambda: finished(flux, 1), WAIT_S, "the CatchUp's outcome")
    [request] = flux.requests()
    assert (request.commit, request.reasons) == (ours, {"CatchUp": [flux.uid]})
    assert request.outcome == "Delivered"
    assert 3.0 <= request.sent_at - _last_write_at(flux) < 3.0 + 10.0
    assert [m for _, m in flux.events()] == [
        f"CatchUp at {ours[:12]}: asked Kustomization {flux.ns}/ks (stamp-source)"
    ]
    artifact = flux.source()["status"]["artifact"]["revision"]
    assert artifact.endswith(f"sha1:{ours}")
    wait_until(lambda: flux.applied(ours), WAIT_S, "Flux to apply our commit")
    applies = [r for r in flux.flux_log.records(mark) if r.is_for("Kustomization", flux.ns, "ks")]
    assert applies and {r.revision for r in applies} == {f"main@sha1:{ours}"}
    made = flux.system.core.read_namespaced_config_map("edited", flux.ns)
    assert made.data == {"value": "from-the-api"}
    wait_until(
        lambda: flux.last_request().get("token") == request.token, WAIT_S, "lastRequest (O6)"
    )


def test_a_second_write_inside_the_quiet_period_restarts_it(tenants: FluxTenants) -> None:
    """Q2, A2: a write decided while the CatchUp waits for quiet restarts the wait, so one
    CatchUp is sent, at the later commit, quietPeriod (4s) after the second write."""
    flux = tenants.make_flux("e2e-catch-up-again", quiet="4s")
    base = flux.tenant.tip()
    _create(flux, "first", {"n": "1"})
    first = flux.tenant.wait_tip_moved(base)
    wait_until(lambda: flux.obligations().catch_up == first, WAIT_S, "a CatchUp owed")
    first_write = _last_write_at(flux)
    assert flux.requests() == []
    _create(flux, "second", {"n": "2"})
    second = flux.tenant.wait_tip_moved(first)
    second_write = _last_write_at(flux)
    assert second_write - first_write < 4.0, "the second write came inside the quiet period"
    wait_until(lambda: finished(flux, 1), WAIT_S, "the CatchUp's outcome")
    [request] = flux.requests()
    assert (request.commit, request.reasons) == (second, {"CatchUp": [flux.uid]})
    assert request.sent_at - second_write >= 4.0
    assert (flux.tenant.tip(), _last_write_at(flux)) == (second, second_write)


def _secret_manifest(ns: str, value: str) -> str:
    encoded = base64.b64encode(value.encode()).decode()
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n"
        f"  namespace: {ns}\ntype: Opaque\ndata:\n  password: {encoded}\n"
    )


def _password(flux: FluxTenant) -> str:
    secret = flux.system.core.read_namespaced_secret("token", flux.ns)
    return base64.b64decode((secret.data or {})["password"]).decode()


def _settled(flux: FluxTenant, events: int) -> bool:
    """The owner read ``events`` events or more, and nothing is owed or out for the applier."""
    owed = flux.obligations()
    sent = flux.requests()
    return (
        flux.events_handled() >= events
        and not owed.owes()
        and owed.attempt is None
        and all(s.outcome for s in sent)
    )


def _refusing(tenants: FluxTenants, name: str, on_refusal: str) -> FluxTenant:
    """A tenant whose folder holds a Secret (applied by Flux) and whose WatchRule selects
    Secrets, settled after the refusal of the Secret Flux created."""
    folder = f"clusters/{name}/{name}/secrets/token.yaml"
    flux = tenants.make_flux(
        name,
        on_refusal=on_refusal,
        rules=[CONFIGMAPS, SECRETS],
        files={folder: _secret_manifest(name, "from-git")},
    )
    assert _password(flux) == "from-git"
    wait_until(lambda: _settled(flux, 1), WAIT_S, f"{name} to settle")
    return flux


def test_a_refused_edit_is_reverted_by_a_refusal_only_with_consent(tenants: FluxTenants) -> None:
    """M10, A5, S1, D4, S4: an API edit of a Secret is refused (never written to Git); with
    ``onRefusal: Reapply`` a Refusal request stamps the Kustomization (its artifact already
    holds the commit, so not the GitRepository), Flux re-applies the folder and the edit is
    reverted, and the GitTarget's ApplyRequested Event names Refusal. The same edit in a
    tenant without consent is not reverted and asks nothing.

    Flux doubles (../shared/facts/appliers.md): a new requestedAt on the Kustomization makes
    it reconcile (F1) and re-apply the current artifact, server-side with force, taking back
    the fields another manager changed (F3, "Does it apply on every reconcile" and "Field
    manager and managedFields"); with no request and a 24h interval it does nothing (F3)."""
    consenting = _refusing(tenants, "e2e-refusal-reapply", "Reapply")
    refusing = _refusing(tenants, "e2e-refusal-none", "None")
    since = consenting.resource_version()
    mark = refusing.flux_log.mark()
    asked_before = len(consenting.requests())
    handled = refusing.events_handled()
    tips = (consenting.tenant.tip(), refusing.tenant.tip())
    for flux in (consenting, refusing):
        edited = base64.b64encode(b"edited").decode()
        flux.system.core.patch_namespaced_secret("token", flux.ns, {"data": {"password": edited}})
    wait_until(lambda: _password(consenting) == "from-git", WAIT_S, "the Refusal to revert")
    wait_until(lambda: _settled(consenting, 1), WAIT_S, "the Refusal's outcome")
    refusals = consenting.requests()[asked_before:]
    assert refusals and all(r.outcome == "Delivered" for r in refusals)
    assert {tuple(r.reasons) for r in refusals} == {("Refusal",)}
    stamps = consenting.stamps(since)
    tokens = {r.token for r in refusals}
    assert ("Kustomization", refusals[0].token) in stamps
    assert not [s for s in stamps if s[0] == "GitRepository" and s[1] in tokens]
    assert any(m.startswith("Refusal at ") for _, m in consenting.events())
    assert (consenting.tenant.condition("GitPathAccepted") or {}).get("status") == "False"
    wait_until(lambda: refusing.events_handled() > handled, WAIT_S, "the edit to be refused")
    assert _password(refusing) == "edited"
    assert not [r for r in refusing.flux_log.records(mark) if r.namespace == refusing.ns]
    assert refusing.requests() == [] and not refusing.obligations().refusals
    assert (refusing.tenant.condition("GitPathAccepted") or {}).get("status") == "False"
    assert (consenting.tenant.tip(), refusing.tenant.tip()) == tips


def test_a_source_on_another_branch_is_never_stamped_until_fixed(tenants: FluxTenants) -> None:
    """S2, D4, A4: a GitRepository following another branch makes ApplierConfigured
    SourceMismatch; a request for an outside push fails with SourceMismatch and stamps
    nothing (no requestedAt on either object); once spec.ref.branch is main again, the
    request, retried with backoff (5s, then doubled), is delivered and Flux applies the
    commit. Flux doubles: a spec change (new generation) makes the GitRepository fetch at
    once (appliers.md F1, F2), and its new revision wakes the Kustomization (F2)."""
    flux = tenants.make_flux("e2e-mismatch", follows="other")
    mismatch = flux.tenant.wait_condition("ApplierConfigured", "False")
    assert mismatch["reason"] == "SourceMismatch"
    since = flux.resource_version()
    path, text = configmap(flux, "from-git", {"greeting": "mismatch"})
    commit = flux.push({path: text})
    wait_until(lambda: finished(flux, 1), WAIT_S, "the first request's outcome")
    assert flux.requests()[0].outcome == "Failed"
    wait_until(lambda: bool(flux.last_request()), WAIT_S, "status.applier.lastRequest")
    assert flux.last_request()["message"].startswith("SourceMismatch")
    assert flux.stamps(since) == []
    flux.patch_source({"ref": {"branch": "main"}})
    wait_until(
        lambda: any(r.outcome == "Delivered" for r in flux.requests()),
        WAIT_S,
        "a request to be delivered",
    )
    sent = flux.requests()
    *failed, delivered = sent
    assert failed and all(r.outcome == "Failed" for r in failed)
    assert all(b.sent_at - a.sent_at >= 5.0 for a, b in pairwise(sent))
    assert (delivered.commit, delivered.reasons) == (commit, {"ForeignCommit": [flux.uid]})
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux to apply the outside commit")
    flux.tenant.wait_condition("ApplierConfigured", "True")


def test_a_write_between_decision_and_attempt_is_stale_and_decided_again(
    tenants: FluxTenants,
) -> None:
    """D3, A4, Q4: a request waits on the queue while no dispatcher runs; an API edit then
    moves the branch. The attempt finds the tip moved: Stale, nothing stamped; the worker
    decides again at the next quiet moment, at the new tip, with everything owed (the
    ForeignCommit and the CatchUp of our push), and that request is delivered and clears
    both: no further request follows (A4: Delivered clears what it covered)."""
    flux = tenants.make_flux("e2e-stale")
    stop_process(flux.system, "dispatcher")
    try:
        path, text = configmap(flux, "from-git", {"greeting": "stale"})
        foreign = flux.push({path: text})
        wait_until(lambda: len(flux.requests()) == 1, WAIT_S, "a request on the queue")
        since = flux.resource_version()
        _create(flux, "edited", {"value": "between"})
        ours = flux.tenant.wait_tip_moved(foreign)
    finally:
        start_process(flux.system, "dispatcher")
    wait_until(lambda: finished(flux, 2), WAIT_S, "the stale request and the next one")
    stale, again = flux.requests()
    assert (stale.commit, stale.outcome) == (foreign, "Stale")
    assert (again.commit, again.outcome) == (ours, "Delivered")
    assert again.reasons == {"ForeignCommit": [flux.uid], "CatchUp": [flux.uid]}
    assert again.sent_at > stale.sent_at
    wait_until(lambda: _settled(flux, 0), WAIT_S, "nothing owed once delivered")
    assert len(flux.requests()) == 2
    assert stale.token not in {value for _, value in flux.stamps(since)}
    wait_until(lambda: flux.applied(ours), WAIT_S, "Flux to apply the new tip")


def test_a_killed_dispatcher_hands_the_request_back_after_its_deadline(
    tenants: FluxTenants,
) -> None:
    """A4, D1, D6: the dispatcher is SIGKILLed while its attempt waits for a suspended
    Kustomization; no outcome ever comes for that token, the worker hands the request back
    after the attempt deadline (10s here) and retries after the backoff (5s); the retry is
    delivered, the killed token never gets an outcome and the retry exactly one.
    Flux doubles: a suspended Kustomization applies no new revision (appliers.md F3,
    spec.suspend); resuming it is a spec change that wakes it (F1)."""
    flux = tenants.make_flux("e2e-killed", suspend=True)
    path, text = configmap(flux, "from-git", {"greeting": "killed"})
    commit = flux.push({path: text})
    wait_until(lambda: len(flux.requests()) == 1, WAIT_S, "the request")
    [first] = flux.requests()

    def stamped() -> bool:
        annotations = flux.source()["metadata"].get("annotations") or {}
        return bool(annotations.get(REQUESTED_AT) == first.token)

    wait_until(stamped, WAIT_S, "the attempt to stamp the GitRepository")
    kill_process(flux.system, "dispatcher")
    start_process(flux.system, "dispatcher")
    flux.patch_kustomization({"suspend": False})
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux to apply once resumed")
    wait_until(lambda: len(flux.requests()) == 2, WAIT_S, "the request handed back and resent")
    wait_until(lambda: _retried(flux), WAIT_S, "the retry's outcome")
    first, retry = flux.requests()
    assert first.outcome is None and retry.outcome == "Delivered"
    assert (retry.commit, retry.reasons) == (commit, {"ForeignCommit": [flux.uid]})
    assert retry.sent_at - first.sent_at >= 10.0 + 5.0
    guards = flux.tenant.client
    assert not guards.exists(flux.tenant.keys.outcome_guard(first.token))
    assert guards.exists(flux.tenant.keys.outcome_guard(retry.token))
    wait_until(lambda: flux.last_request().get("token") == retry.token, WAIT_S, "lastRequest (O6)")


def _retried(flux: FluxTenant) -> bool:
    """Two requests, the second with its outcome (the killed one never has one)."""
    sent = flux.requests()
    return len(sent) == 2 and sent[-1].outcome is not None


def test_a_recreated_git_target_inherits_no_request_and_no_obligation(
    tenants: FluxTenants,
) -> None:
    """S3, A5: a GitTarget with a delivered request and a CatchUp still owed (quietPeriod 30s)
    is deleted and recreated under the same name: the new one shows no lastRequest, the
    CatchUp owed to the old uid is dropped, and the next request names only the new uid."""
    flux = tenants.make_flux("e2e-recreate", quiet="30s")
    path, text = configmap(flux, "from-git", {"greeting": "first"})
    flux.push({path: text})
    wait_until(lambda: finished(flux, 1), WAIT_S, "the first request")
    wait_until(lambda: bool(flux.last_request()), WAIT_S, "the old GitTarget's lastRequest")
    base = flux.tenant.tip()
    _create(flux, "edited", {"value": "owed"})
    flux.tenant.wait_tip_moved(base)
    wait_until(lambda: flux.obligations().catch_up_uids == {flux.uid}, WAIT_S, "a CatchUp owed")
    old, spec = flux.uid, flux.tenant.target()["spec"]
    api = flux.system.custom
    api.delete_namespaced_custom_object(GROUP, VERSION, flux.ns, "gittargets", "gt")
    ledger = flux.tenant.keys.ledger(GitTargetUid(old))
    wait_until(lambda: not flux.tenant.client.exists(ledger), WAIT_S, "the old ledger entry gone")
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GitTarget", "metadata": {"name": "gt"}}
    api.create_namespaced_custom_object(
        GROUP, VERSION, flux.ns, "gittargets", {**body, "spec": spec}
    )
    new = str(flux.tenant.target()["metadata"]["uid"])
    assert new != old
    flux.tenant.wait_condition("ApplierConfigured", "True")
    wait_until(lambda: not flux.obligations().owes(), WAIT_S, "the old CatchUp dropped")
    wait_until(lambda: flux.applier_status().get("name") == "ks", WAIT_S, "status.applier")
    assert "lastRequest" not in flux.applier_status()
    asked = len(flux.requests())
    later, later_text = configmap(flux, "later", {"greeting": "new"})
    commit = flux.push({later: later_text})
    wait_until(lambda: finished(flux, asked + 1), WAIT_S, "the new GitTarget's request")
    request = flux.requests()[-1]
    assert (request.commit, request.reasons) == (commit, {"ForeignCommit": [new]})
    wait_until(lambda: bool(flux.last_request()), WAIT_S, "the new GitTarget's lastRequest")
    assert flux.last_request()["token"] == request.token


def test_a_kustomization_named_by_two_git_targets_is_asked_once_after_the_longer_quiet(
    tenants: FluxTenants,
) -> None:
    """A3, A2: two GitTargets (quietPeriod 2s and 6s) write two folders that one
    Kustomization applies; after an edit in each, the Kustomization is asked once, with a
    CatchUp naming both uids, 6s after the last write (Flux doubles: one GitRepository
    stamp, one new revision, one apply of the whole path: appliers.md F1, F2)."""
    flux = tenants.make_flux("e2e-shared", quiet="2s")
    other = tenants.add_target(flux, "more", "6s", SERVICE_ACCOUNTS)
    wait_until(
        lambda: flux.applier_status("more").get("name") == "ks",
        WAIT_S,
        "the second GitTarget's status.applier",
    )
    base = flux.tenant.tip()
    _create(flux, "edited", {"value": "shared"})
    flux.system.core.create_namespaced_service_account(
        flux.ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot"))
    )

    def both_pushed() -> bool:
        files = flux.tenant.files()
        return f"clusters/{flux.ns}-more/{flux.ns}/serviceaccounts/robot.yaml" in files and (
            f"{flux.tenant.path}/{flux.ns}/configmaps/edited.yaml" in files
        )

    wait_until(both_pushed, WAIT_S, "both writes pushed")
    wait_until(lambda: finished(flux, 1), WAIT_S, "the CatchUp's outcome")
    [request] = flux.requests()
    assert request.reasons == {"CatchUp": sorted([flux.uid, other])}
    assert request.commit == flux.tenant.tip() != base
    assert request.sent_at - _last_write_at(flux) >= 6.0
    assert request.outcome == "Delivered"
