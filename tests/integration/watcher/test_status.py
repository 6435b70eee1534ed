"""Status of GitProviders, GitTargets and WatchRules, as the watcher writes it.

Conditions follow metav1.Condition as apimachinery's ``meta.SetStatusCondition`` keeps them
(staging/src/k8s.io/apimachinery/pkg/api/meta/conditions.go: ``lastTransitionTime`` moves only
when the status differs), and the Ready/Reconciling/Stalled trio the CRDs document
(docs/crds.md; behaviour.md §1).
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.githost import GitHost
from shared.model.ids import GitTargetUid
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    GROUP,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    mirror_setup,
    watch_rule,
)

pytestmark = pytest.mark.integration

#: The namespace the product runs in (``Settings.namespace``): audit token Secrets live here.
OPERATOR_NS = "gitops-reverser"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _secret(ns: str, name: str, **data: str) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": encoded,
    }


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def locked_host(tmp_path: Path) -> Iterator[GitHost]:
    """A Git host that wants HTTP basic credentials bot / s3cret."""
    host = GitHost(tmp_path / "locked", auth=("bot", "s3cret"))
    host.start()
    host.create_repo("team/locked", files={"README.md": b"x\n"})
    yield host
    host.stop()


def test_git_provider_secret_not_found_then_ready(rig: Rig, repo_url: str) -> None:
    """behaviour.md §1 GitProvider: a missing secretRef Secret is SecretNotFound; it heals
    when the Secret is created, so kstatus must read it as in progress (Reconciling=True), not
    as needing a spec change (Stalled, issue 26); once the Secret exists and the repository
    answers ls-remote, Ready=True Succeeded."""
    c = rig.cluster
    c.namespace("team-a")
    c.create(git_provider("team-a", repo_url, secretRef={"name": "creds"}))
    rig.burst()
    conditions = c.conditions("GitProvider", "repo", "team-a")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == (
        "False",
        "SecretNotFound",
    )
    assert conditions["Stalled"]["status"] == "False"
    assert (conditions["Reconciling"]["status"], conditions["Reconciling"]["reason"]) == (
        "True",
        "SecretNotFound",
    )
    assert "team-a/creds" in conditions["Ready"]["message"]

    c.create(_secret("team-a", "creds", username="bot", password="anything"))
    rig.clock.now += 60
    rig.burst()
    conditions = c.conditions("GitProvider", "repo", "team-a")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("True", "Succeeded")
    assert conditions["Stalled"]["status"] == "False"


def test_git_provider_probe_uses_the_secret_credentials(rig: Rig, locked_host: GitHost) -> None:
    """behaviour.md §1 GitProvider (ConnectionFailed from an ls-remote probe): with the right
    basic credentials the probe succeeds, with a wrong password git is refused (HTTP 401 with
    prompts disabled), and a closed port fails to connect."""
    c = rig.cluster
    c.namespace("team-a")
    c.create(_secret("team-a", "good", username="bot", password="s3cret"))
    c.create(_secret("team-a", "bad", username="bot", password="wrong"))
    url = locked_host.repo_url("team/locked")
    c.create(git_provider("team-a", url, name="good", secretRef={"name": "good"}))
    c.create(git_provider("team-a", url, name="bad", secretRef={"name": "bad"}))
    c.create(git_provider("team-a", f"http://127.0.0.1:{_closed_port()}/x.git", name="down"))
    rig.burst()

    ready = {n: c.conditions("GitProvider", n, "team-a")["Ready"] for n in ("good", "bad", "down")}
    assert (ready["good"]["status"], ready["good"]["reason"]) == ("True", "Succeeded")
    assert (ready["bad"]["status"], ready["bad"]["reason"]) == ("False", "ConnectionFailed")
    assert (ready["down"]["status"], ready["down"]["reason"]) == ("False", "ConnectionFailed")
    assert "s3cret" not in str(ready) and "wrong" not in str(ready)


def test_disallowed_branch_is_not_validated_and_not_served(rig: Rig, repo_url: str) -> None:
    """behaviour.md §1 GitTarget: the branch must match allowedBranches (Go filepath.Match
    globs, facts/upstream-gitops-reverser.md §2.1); otherwise Validated=False
    BranchNotAllowed, the GitTarget stalls, a Warning Event says why, nothing is published."""
    uid = mirror_setup(rig, repo_url, branch="env/prod/eu")
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    rig.burst()

    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert conditions["Validated"]["status"] == "False"
    assert conditions["Validated"]["reason"] == "BranchNotAllowed"
    assert (conditions["Ready"]["status"], conditions["Stalled"]["status"]) == ("False", "True")
    assert rig.config.target(GitTargetUid(uid)) is None
    assert rig.events(repo_url, "env/prod/eu") == []
    events = rig.cluster.resource("v1", "Event").get(namespace="team-a").to_dict()["items"]
    mine = [e for e in events if e["involvedObject"]["uid"] == uid]
    assert [(e["type"], e["reason"]) for e in mine] == [("Warning", "BranchNotAllowed")]


def test_git_path_accepted_follows_the_standing_refusal(rig: Rig, repo_url: str) -> None:
    """M10: while ``ConfigStore.set_refusal`` stands, GitPathAccepted=False with its reason
    and message and the GitTarget stalls; lastTransitionTime moves only on status changes."""
    uid = GitTargetUid(mirror_setup(rig, repo_url))
    rig.burst()
    before = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert before["GitPathAccepted"]["status"] == "True"

    rig.config.set_refusal(uid, "SecretRefused", "Secret team-a/db is never written to Git")
    rig.clock.now += 3600
    rig.burst()
    refused = rig.cluster.conditions("GitTarget", "target", "team-a")
    accepted = refused["GitPathAccepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "SecretRefused")
    assert accepted["message"] == "Secret team-a/db is never written to Git"
    assert (refused["Ready"]["reason"], refused["Stalled"]["status"]) == ("SecretRefused", "True")
    assert accepted["lastTransitionTime"] != before["GitPathAccepted"]["lastTransitionTime"]
    assert refused["Validated"]["lastTransitionTime"] == before["Validated"]["lastTransitionTime"]

    rig.config.clear_refusal(uid)
    rig.burst()
    recovered = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert recovered["GitPathAccepted"]["status"] == "True"
    assert recovered["Ready"]["status"] == "True"


def test_watch_rule_ready_needs_its_target_and_resolvable_resources(
    rig: Rig, repo_url: str
) -> None:
    """behaviour.md §1 WatchRule: Ready when its GitTarget exists and every resource resolves
    through the GitTarget's ClusterProvider; else GitTargetNotFound or UnresolvedResources."""
    mirror_setup(rig, repo_url)
    c = rig.cluster
    c.create(watch_rule("team-a", [{"apiGroups": [""], "resources": ["widgets"]}], name="odd"))
    c.create(watch_rule("team-a", CONFIGMAPS, name="orphan", target="nobody"))
    rig.burst()

    ready = {n: c.conditions("WatchRule", n, "team-a")["Ready"] for n in ("rule", "odd", "orphan")}
    assert (ready["rule"]["status"], ready["rule"]["reason"]) == ("True", "Succeeded")
    assert (ready["odd"]["status"], ready["odd"]["reason"]) == ("False", "UnresolvedResources")
    assert "widgets" in ready["odd"]["message"]
    assert (ready["orphan"]["status"], ready["orphan"]["reason"]) == ("False", "GitTargetNotFound")


def test_a_converged_pass_writes_no_status(rig: Rig, repo_url: str) -> None:
    """Status is written only when it changes (upstream F3, facts/upstream-gitops-reverser.md
    §7.4: no-op status writes suppressed), so resourceVersions stay still."""
    mirror_setup(rig, repo_url)
    rig.burst()
    kinds = [
        ("ClusterProvider", "default", None),
        ("GitProvider", "repo", "team-a"),
        ("GitTarget", "target", "team-a"),
        ("WatchRule", "rule", "team-a"),
    ]
    versions = [
        rig.cluster.get(GROUP, k, n, ns)["metadata"]["resourceVersion"] for k, n, ns in kinds
    ]
    assert rig.metric("gitops_reverser_watcher_status_writes_total", kind="GitTarget") == 1

    rig.clock.now += 600
    rig.burst()
    assert [
        rig.cluster.get(GROUP, k, n, ns)["metadata"]["resourceVersion"] for k, n, ns in kinds
    ] == versions
    assert rig.metric("gitops_reverser_watcher_status_writes_total", kind="GitTarget") == 0
    target = rig.cluster.get(GROUP, "GitTarget", "target", "team-a")
    assert target["status"]["observedGeneration"] == target["metadata"]["generation"]


def test_missing_cluster_provider_fails_validation(rig: Rig, repo_url: str) -> None:
    """behaviour.md §1 GitTarget: spec.clusterProviderRef defaults to ``default``, which must
    exist (ClusterProviderNotFound); the WatchRule cannot resolve without a cluster."""
    c = rig.cluster
    c.namespace("team-a")
    c.create(git_provider("team-a", repo_url))
    c.create(git_target("team-a"))
    c.create(watch_rule("team-a", CONFIGMAPS))
    c.create(cluster_provider("elsewhere", accessFrom={"selector": {}}))
    rig.burst()

    target = c.conditions("GitTarget", "target", "team-a")
    assert target["Validated"]["reason"] == "ClusterProviderNotFound"
    rule = c.conditions("WatchRule", "rule", "team-a")
    assert (rule["Ready"]["status"], rule["Ready"]["reason"]) == (
        "False",
        "ClusterProviderNotFound",
    )
    elsewhere = c.conditions("ClusterProvider", "elsewhere")
    assert elsewhere["Ready"]["status"] == "True"


def test_a_git_provider_receiver_is_published_with_its_webhook_path(
    rig: Rig, repo_url: str
) -> None:
    """behaviour.md §1 GitProvider: status.receiver.webhookPath = /hook/ + hex sha256(token +
    name + namespace) (Flux's receiver path, facts webhooks-git-libs.md §1.6); the receiver
    finds the GitProvider by that digest (R1), with the branches its GitTargets use (R4)."""
    import hashlib

    from shared.store.receivers import ReceiverDirectory

    c = rig.cluster
    c.namespace("team-a")
    c.create(_secret("team-a", "hook", token="t0ken"))
    c.create(
        git_provider("team-a", repo_url, receiver={"type": "gitea", "secretRef": {"name": "hook"}})
    )
    c.create(git_target("team-a"))
    rig.burst()
    digest = hashlib.sha256(b"t0ken" + b"repo" + b"team-a").hexdigest()
    provider = c.get(GROUP, "GitProvider", "repo", "team-a")
    assert provider["status"]["receiver"]["webhookPath"] == f"/hook/{digest}"
    record = ReceiverDirectory(rig.redis, rig.keys).lookup(digest)
    assert record is not None
    assert (record.type, record.provider, record.branches) == ("gitea", "team-a/repo", ("main",))
    c.delete(GROUP, "GitProvider", "repo", "team-a")
    rig.burst()
    assert ReceiverDirectory(rig.redis, rig.keys).lookup(digest) is None


def test_a_missing_recipients_secret_stalls_the_target_with_invalid_encryption(
    rig: Rig, repo_url: str
) -> None:
    """P3, T4: spec.encryption naming a recipients Secret that is not in the GitTarget's
    namespace is a condition the user sees (Validated=False InvalidEncryption, naming the
    Secret); nothing of the GitTarget is published, so no Secret is refused or written."""
    uid = mirror_setup(
        rig,
        repo_url,
        rules=[{"apiGroups": [""], "resources": ["secrets"]}],
        encryption={"age": {"recipientsSecretRef": {"name": "missing-keys"}}},
    )
    rig.burst()

    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert (conditions["Validated"]["status"], conditions["Validated"]["reason"]) == (
        "False",
        "InvalidEncryption",
    )
    assert "team-a/missing-keys" in conditions["Validated"]["message"]
    assert conditions["Stalled"]["status"] == "True"
    assert rig.config.target(GitTargetUid(uid)) is None


def test_a_cluster_provider_losing_a_shared_audit_route_says_so(rig: Rig) -> None:
    """P5: two ClusterProviders share an audit route but name different token Secrets; the
    first by name serves it (AttributionConfigured=True), the other shows
    AttributionConfigured=False AuditRouteConflict (its Ready is not affected). Removing its
    attribution removes the condition."""
    c = rig.cluster

    def attribution(secret: str) -> dict[str, Any]:
        return {"auditRoute": "shared", "tokenSecretRef": {"name": secret}}

    c.namespace(OPERATOR_NS)
    c.create(_secret(OPERATOR_NS, "token-a", token="a-token"))
    c.create(_secret(OPERATOR_NS, "token-b", token="b-token"))
    c.create(cluster_provider("a", accessFrom={}, attribution=attribution("token-a")))
    c.create(cluster_provider("b", accessFrom={}, attribution=attribution("token-b")))
    rig.burst()
    a, b = c.conditions("ClusterProvider", "a"), c.conditions("ClusterProvider", "b")
    assert (a["AttributionConfigured"]["status"], a["AttributionConfigured"]["reason"]) == (
        "True",
        "AuditRouteServed",
    )
    assert (b["AttributionConfigured"]["status"], b["AttributionConfigured"]["reason"]) == (
        "False",
        "AuditRouteConflict",
    )
    assert "ClusterProvider a" in b["AttributionConfigured"]["message"]
    assert b["Ready"]["status"] == "True"
    c.patch(GROUP, "ClusterProvider", "b", None, {"spec": {"attribution": None}})
    rig.burst()
    assert "AttributionConfigured" not in c.conditions("ClusterProvider", "b")


def _cluster_providers_table(rig: Rig) -> dict[str, dict[str, Any]]:
    """``kubectl get clusterproviders`` as the API server answers it: name -> cells (the
    CRD's printer columns, served by sandbox/kube/tables.py as apiextensions does)."""
    server = rig.cluster.server
    pool = server.api_client().rest_client.pool_manager
    path = "/apis/gitopsreverser.io/v1alpha1/clusterproviders"
    response = pool.request("GET", server.url + path, headers={"Accept": TABLE})
    assert response.status == 200, response.data
    table = json.loads(response.data)
    names = [c["name"] for c in table["columnDefinitions"]]
    return {
        row["object"]["metadata"]["name"]: dict(zip(names, row["cells"], strict=True))
        for row in table["rows"]
    }


def test_a_missing_or_keyless_audit_token_secret_shows_until_it_is_fixed(rig: Rig) -> None:
    """P5: a ClusterProvider whose audit route's token Secret does not exist shows
    AttributionConfigured=False TokenSecretNotFound (kubectl get's ATTRIBUTION column too),
    its Ready untouched; once the Secret exists without the key, TokenSecretInvalid; once the
    key holds a token, True AuditRouteServed. Each step is the next watcher pass."""
    c = rig.cluster
    c.namespace(OPERATOR_NS)
    c.create(
        cluster_provider(
            "prod", accessFrom={}, attribution={"tokenSecretRef": {"name": "audit-token"}}
        )
    )

    def attribution() -> tuple[str, str, str]:
        cond = c.conditions("ClusterProvider", "prod")["AttributionConfigured"]
        return cond["status"], cond["reason"], cond["message"]

    rig.burst()
    status, reason, message = attribution()
    assert (status, reason) == ("False", "TokenSecretNotFound")
    assert f"Secret {OPERATOR_NS}/audit-token" in message and "503" in message
    assert c.conditions("ClusterProvider", "prod")["Ready"]["status"] == "True"
    row = _cluster_providers_table(rig)["prod"]
    assert (row["Ready"], row["Attribution"]) == ("True", "TokenSecretNotFound")

    c.create(_secret(OPERATOR_NS, "audit-token", other="x"))
    rig.burst()
    status, reason, message = attribution()
    assert (status, reason) == ("False", "TokenSecretInvalid")
    assert "no non-empty key token" in message

    c.patch("v1", "Secret", "audit-token", OPERATOR_NS, {"stringData": {"token": "t0ken"}})
    rig.burst()
    assert attribution()[:2] == ("True", "AuditRouteServed")
    assert _cluster_providers_table(rig)["prod"]["Attribution"] == "AuditRouteServed"


def test_audit_facts_that_stop_arriving_show_on_the_cluster_provider(rig: Rig) -> None:
    """N5: a branch owner's verdict on the route (``FactStreams.record_joins``, written when
    edits find no audit fact within the grace, and again when one does) is the
    ClusterProvider's AuditFactsReceived, in kubectl get's FACTS column too."""
    from shared.store.attribution import FactStreams

    c = rig.cluster
    c.namespace(OPERATOR_NS)
    c.create(_secret(OPERATOR_NS, "audit-token", token="t0ken"))
    c.create(
        cluster_provider(
            "prod", accessFrom={}, attribution={"tokenSecretRef": {"name": "audit-token"}}
        )
    )

    def facts() -> tuple[str, str, str]:
        cond = c.conditions("ClusterProvider", "prod")["AuditFactsReceived"]
        return cond["status"], cond["reason"], cond["message"]

    rig.burst()
    assert facts()[:2] == ("Unknown", "NoEditsJudged")
    streams = FactStreams(rig.redis, rig.keys)
    streams.record_joins("prod", "absent")
    rig.burst()
    status, reason, message = facts()
    assert (status, reason) == ("False", "NoAuditFacts") and "/audit-webhook/prod" in message
    assert c.conditions("ClusterProvider", "prod")["Ready"]["status"] == "True"
    assert _cluster_providers_table(rig)["prod"]["Facts"] == "NoAuditFacts"
    streams.record_joins("prod", "joined")
    rig.burst()
    assert facts()[:2] == ("True", "FactsJoined")
    c.patch(GROUP, "ClusterProvider", "prod", None, {"spec": {"attribution": None}})
    rig.burst()
    assert "AuditFactsReceived" not in c.conditions("ClusterProvider", "prod")
