"""The GitTarget's applier in status: ``ApplierConfigured`` (S2) and ``status.applier`` (S3, O6).

Each test drives the sandbox API double with the official client, with the real Flux and
Argo CD CRDs loaded from ../shared/crds, and runs the watcher against it with real Redis.
Object shapes follow ../shared/facts/appliers.md F2 (GitRepository), F3 (Kustomization) and
A1 (Application).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes.dynamic import DynamicClient

from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from shared.model.ledger import LastRequest
from tests.helpers import wait_until
from tests.integration.watcher.harness import (
    GROUP,
    Cluster,
    Rig,
    allowing,
    cluster_provider,
    mirror_setup,
)

pytestmark = pytest.mark.integration

OPERATOR_NS = "gitops-reverser"  # Settings.namespace's default: kubeconfig Secrets live here
FLUX_NS = "flux-system"
KUSTOMIZATION = {"kustomizationRef": {"name": "apps", "namespace": FLUX_NS}}
REQUEST = LastRequest("req-1", "c" * 40, ("CatchUp",), 1_900_000_000, 1_900_000_012, "Delivered")


def gitrepository(url: str, ref: dict[str, str] | None = None) -> dict[str, Any]:
    """A GitRepository that fetches only when asked (a day's interval), following main."""
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "config", "namespace": FLUX_NS},
        "spec": {"url": url, "interval": "24h", "ref": ref or {"branch": "main"}},
    }


def kustomization(path: str = "./clusters") -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": FLUX_NS},
        "spec": {
            "interval": "10m",
            "prune": True,
            "path": path,
            "sourceRef": {"kind": "GitRepository", "name": "config"},
        },
    }


def flux_pair(cluster: Cluster, url: str, ref: dict[str, str] | None = None) -> None:
    cluster.namespace(FLUX_NS)
    cluster.create(gitrepository(url, ref))
    cluster.create(kustomization())


def target(rig: Rig, name: str = "target", ns: str = "team-a") -> dict[str, Any]:
    return rig.cluster.get(GROUP, "GitTarget", name, ns)


def applier_condition(rig: Rig) -> tuple[str, str, str]:
    found = rig.cluster.conditions("GitTarget", "target", "team-a")["ApplierConfigured"]
    return found["status"], found["reason"], found["message"]


def test_a_correct_flux_pair_is_configured_and_status_names_the_applier(
    rig: Rig, repo_url: str
) -> None:
    """S2: Kustomization and GitRepository exist, follow this repository and branch, fetch
    only when asked, cover the path, and (no access rules: everything allowed) may be
    patched -> True/Configured; S3: status.applier is the applier as resolved (the
    clusterProviderRef defaults to the GitTarget's own) and no request was made yet."""
    flux_pair(rig.cluster, repo_url)
    mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    rig.burst()

    assert applier_condition(rig)[:2] == ("True", "Configured")
    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert conditions["Ready"]["status"] == "True"
    assert target(rig)["status"]["applier"] == {
        "kind": "Kustomization",
        "name": "apps",
        "namespace": FLUX_NS,
        "clusterProvider": "default",
    }


def test_a_gitrepository_on_another_branch_is_a_source_mismatch_that_stalls(
    rig: Rig, repo_url: str
) -> None:
    """S2 SourceMismatch: the GitRepository follows ``dev`` (F2 ``spec.ref.branch``); the
    GitTarget is Stalled with the same reason and not Ready."""
    flux_pair(rig.cluster, repo_url, ref={"branch": "dev"})
    mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    rig.burst()

    status, reason, message = applier_condition(rig)
    assert (status, reason) == ("False", "SourceMismatch")
    assert "follows refs/heads/dev, not branch main" in message
    conditions = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert (conditions["Stalled"]["status"], conditions["Stalled"]["reason"]) == (
        "True",
        "SourceMismatch",
    )
    assert conditions["Ready"]["status"] == "False"


def test_a_missing_kustomization_is_applier_not_found(rig: Rig, repo_url: str) -> None:
    """S2 ApplierNotFound: nothing named ``apps`` in flux-system."""
    rig.cluster.namespace(FLUX_NS)
    mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    rig.burst()

    status, reason, message = applier_condition(rig)
    assert (status, reason) == ("False", "ApplierNotFound")
    assert "Kustomization flux-system/apps not found" in message


def test_an_applier_cluster_provider_that_does_not_admit_the_namespace(
    rig: Rig, repo_url: str
) -> None:
    """S2 NotAdmitted: the applier's ClusterProvider (``spec.applier.clusterProviderRef``)
    admits only namespace ``other`` (behaviour.md §1 ClusterProvider ``accessFrom``)."""
    flux_pair(rig.cluster, repo_url)
    rig.cluster.create(
        cluster_provider("flux", accessFrom={"names": ["other"]}, **allowing("team-a", FLUX_NS))
    )
    applier = {**KUSTOMIZATION, "clusterProviderRef": {"name": "flux"}}
    mirror_setup(rig, repo_url, applier=applier)
    rig.burst()

    status, reason, message = applier_condition(rig)
    assert (status, reason) == ("False", "NotAdmitted")
    assert "flux does not admit namespace team-a" in message
    assert target(rig)["status"]["applier"]["clusterProvider"] == "flux"


@contextmanager
def guarded_cluster(cache_dir: Path, rules: list[AccessRule]) -> Iterator[Cluster]:
    """A second cluster whose API answers token ``t`` as user ``watcher`` under ``rules``,
    and token ``a`` as an admin that sets it up."""
    admin = AccessRule("admin", ("*",), ("*",), ("*",))
    server = KubeApiServer(
        all_crd_files(), tokens={"t": "watcher", "a": "admin"}, rules=[admin, *rules]
    )
    server.start()
    try:
        cluster = Cluster(server, cache_dir)
        cache = str(cache_dir / f"admin-{server.port}.json")
        cluster.dynamic = DynamicClient(server.api_client(token="a"), cache_file=cache)
        yield cluster
    finally:
        server.stop()


def kubeconfig_secret(rig: Rig, remote: Cluster, tmp_path: Path) -> None:
    """The remote cluster's kubeconfig, with the watcher's token, where the product reads it."""
    path = tmp_path / "remote.kubeconfig"
    remote.server.write_kubeconfig(path, token="t")
    rig.cluster.namespace(OPERATOR_NS)
    rig.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "flux-kubeconfig", "namespace": OPERATOR_NS},
            "data": {"config": base64.b64encode(path.read_bytes()).decode()},
        }
    )


@pytest.mark.parametrize(
    ("source_verbs", "expected"),
    [(("get", "patch"), "Configured"), (("get",), "AccessDenied")],
)
def test_access_is_asked_of_the_appliers_cluster_with_self_subject_access_reviews(
    rig: Rig, repo_url: str, tmp_path: Path, source_verbs: tuple[str, ...], expected: str
) -> None:
    """S2 AccessDenied: the watcher's identity in the applier's cluster may get but not
    patch GitRepositories, and a SelfSubjectAccessReview ("checks whether the current user
    can perform an action", https://kubernetes.io/docs/reference/kubernetes-api/
    authorization-resources/self-subject-access-review-v1/) says so; the sandbox answers
    reviews from the same rules as requests (sandbox/kube/access.py). With patch granted the same
    setup is Configured, which shows the check reads through the applier's ClusterProvider
    (``spec.applier.clusterProviderRef``, behaviour.md §1) and its kubeconfig's token."""
    rules = [
        AccessRule("watcher", ("*",), ("kustomize.toolkit.fluxcd.io",), ("*",)),
        AccessRule("watcher", source_verbs, ("source.toolkit.fluxcd.io",), ("*",)),
    ]
    with guarded_cluster(tmp_path, rules) as remote:
        flux_pair(remote, repo_url)
        kubeconfig_secret(rig, remote, tmp_path)
        secret = {"secretRef": {"name": "flux-kubeconfig", "key": "config"}}
        rig.cluster.create(
            cluster_provider(
                "flux",
                kubeConfig=secret,
                accessFrom={"names": ["team-a"]},
                **allowing("team-a", FLUX_NS),
            )
        )
        applier = {**KUSTOMIZATION, "clusterProviderRef": {"name": "flux"}}
        mirror_setup(rig, repo_url, applier=applier)
        rig.burst()

    status, reason, message = applier_condition(rig)
    assert reason == expected
    if expected == "AccessDenied":
        assert status == "False"
        assert message == (
            "not allowed to patch gitrepositories.source.toolkit.fluxcd.io flux-system/config"
        )


def test_an_application_with_automated_sync_is_refused(rig: Rig, repo_url: str) -> None:
    """S2 AutomatedSyncEnabled: ``syncPolicy.automated`` set without ``enabled: false``
    syncs by itself (appliers.md A1 ``IsAutomatedSyncEnabled``)."""
    rig.cluster.namespace("argocd")
    rig.cluster.create(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {
                "project": "default",
                "destination": {"server": "https://kubernetes.default.svc"},
                "source": {"repoURL": repo_url, "path": "clusters", "targetRevision": "main"},
                "syncPolicy": {"automated": {"prune": True}},
            },
        }
    )
    app = {"applicationRef": {"name": "web", "namespace": "argocd"}}
    mirror_setup(rig, repo_url, appliers_from=("argocd",), applier=app)
    rig.burst()

    status, reason, _ = applier_condition(rig)
    assert (status, reason) == ("False", "AutomatedSyncEnabled")
    assert target(rig)["status"]["applier"]["kind"] == "Application"


def test_last_request_appears_after_one_light_pass_and_only_changes_are_written(
    rig: Rig, repo_url: str
) -> None:
    """S3, O6: after ``Ledger.record`` one light pass (no reconcile) publishes lastRequest;
    a pass with nothing new writes nothing (the resourceVersion stays)."""
    flux_pair(rig.cluster, repo_url)
    uid = mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    watcher = rig.watcher()
    try:
        watcher.reconcile_once()
        assert "lastRequest" not in target(rig)["status"]["applier"]
        rig.ledger.record([uid], REQUEST)
        assert watcher.publish_applier_status() == 1
        published = target(rig)
        assert published["status"]["applier"]["lastRequest"] == {
            "reasons": ["CatchUp"],
            "commit": "c" * 40,
            "token": "req-1",
            "sentAt": "2030-03-17T17:46:40Z",
            "finishedAt": "2030-03-17T17:46:52Z",
            "outcome": "Delivered",
        }
        assert watcher.publish_applier_status() == 0
        assert (
            target(rig)["metadata"]["resourceVersion"] == (published["metadata"]["resourceVersion"])
        )
    finally:
        watcher.close()


def test_the_running_watcher_publishes_last_request_between_reconcile_passes(
    rig: Rig, repo_url: str
) -> None:
    """O6: ``Watcher.run`` publishes a ledger change within seconds although its next
    reconcile pass is an hour away (``applier_status_period`` is the light loop's period)."""
    flux_pair(rig.cluster, repo_url)
    uid = mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    rig.settings_overrides = {
        "reconcile_period": timedelta(hours=1),
        "applier_status_period": timedelta(milliseconds=50),
    }
    watcher = rig.watcher()
    runner = threading.Thread(target=watcher.run, daemon=True)
    runner.start()
    try:
        wait_until(lambda: "applier" in target(rig).get("status", {}), 10, "first pass")
        rig.ledger.record([uid], REQUEST)
        wait_until(lambda: "lastRequest" in target(rig)["status"]["applier"], 5, "lastRequest")
    finally:
        watcher.request_stop()
        runner.join(30)
        watcher.close()
    assert not runner.is_alive()
    assert target(rig)["status"]["applier"]["lastRequest"]["token"] == "req-1"


def test_a_recreated_git_target_shows_no_last_request(rig: Rig, repo_url: str) -> None:
    """S3: the ledger is keyed by uid: a GitTarget deleted and recreated under the same name
    starts without lastRequest, even when the old incarnation's entry moves again before
    the watcher notices the new one (the write is tied to the uid it was computed for)."""
    flux_pair(rig.cluster, repo_url)
    old_uid = mirror_setup(rig, repo_url, appliers_from=(FLUX_NS,), applier=KUSTOMIZATION)
    watcher = rig.watcher()
    try:
        watcher.reconcile_once()
        rig.ledger.record([old_uid], REQUEST)
        watcher.publish_applier_status()
        old = target(rig)
        assert old["status"]["applier"]["lastRequest"]["token"] == "req-1"
        rig.cluster.delete(GROUP, "GitTarget", "target", "team-a")
        body = {k: old[k] for k in ("apiVersion", "kind", "spec")}
        rig.cluster.create({**body, "metadata": {"name": "target", "namespace": "team-a"}})
        rig.cluster.resource(GROUP, "GitTarget").status.patch(
            name="target",
            namespace="team-a",
            body={"status": {"observedGeneration": 1}},
            content_type="application/merge-patch+json",
        )
        rig.ledger.record([old_uid], replace(REQUEST, token="req-2"))
        assert watcher.publish_applier_status() == 0
        assert target(rig)["status"] == {"observedGeneration": 1}
        watcher.reconcile_once()
    finally:
        watcher.close()
    new = target(rig)
    assert new["metadata"]["uid"] != old_uid
    assert new["status"]["applier"] == {
        "kind": "Kustomization",
        "name": "apps",
        "namespace": FLUX_NS,
        "clusterProvider": "default",
    }
