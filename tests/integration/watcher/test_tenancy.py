"""T1 and T2 in the watcher.

T1: one GitProvider holds a branch; another namespace's GitProvider naming the
same repository and branch never gets its GitTargets served with the holder's Secret, and never
sets the branch's committer or templates (the reliability probe's branch hijack, both orders)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import manifests as m
from sandbox.githost import GitHost
from shared.decide.applier_check import CROSS_NAMESPACE_APPLIER
from shared.decide.claims import BRANCH_HELD
from shared.model.ids import Branch, GitTargetUid
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    watch_rule,
)

pytestmark = pytest.mark.integration

PASSWORD = "s3cretPW-alice"


@pytest.fixture
def private_url(tmp_path: Path) -> Iterator[str]:
    """A private repository: the host answers only alice's credentials."""
    host = GitHost(tmp_path / "private", auth=("alice", PASSWORD))
    host.start()
    host.create_repo("sandbox/priv", files={"README.md": b"x\n"})
    yield host.repo_url("sandbox/priv")
    host.stop()


def _secret(ns: str) -> dict[str, object]:
    data = {"username": b"alice", "password": PASSWORD.encode()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "git-creds", "namespace": ns},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def _tenant(
    rig: Rig,
    ns: str,
    url: str,
    secret: bool,
    target_spec: dict[str, object] | None = None,
    **provider: object,
) -> str:
    c = rig.cluster
    c.namespace(ns)
    if secret:
        c.create(_secret(ns))
        provider["secretRef"] = {"name": "git-creds"}
    c.create(git_provider(ns, url, **provider))
    target = c.create(git_target(ns, **(target_spec or {})))
    c.create(watch_rule(ns, CONFIGMAPS))
    return str(target["metadata"]["uid"])


def test_a_namespace_without_access_sorting_first_takes_nothing(rig: Rig, private_url: str) -> None:
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    victim = _tenant(rig, "victim", private_url, secret=True)
    attacker = _tenant(
        rig,
        "aattacker",
        private_url,
        secret=False,
        commit={"committer": {"name": "Victim Admin", "email": "admin@victim.example"}},
    )
    rig.burst()

    branch = rig.config.branch(Branch(private_url, "main").key)
    assert branch is not None
    assert (branch.provider_namespace, branch.secret_name) == ("victim", "git-creds")
    assert branch.committer_name != "Victim Admin"
    assert rig.config.target(GitTargetUid(victim)) is not None
    assert rig.config.target(GitTargetUid(attacker)) is None, "never served on that branch"
    validated = rig.cluster.conditions("GitTarget", "target", "aattacker")["Validated"]
    assert (validated["status"], validated["reason"]) == ("False", BRANCH_HELD)
    assert "victim" not in validated["message"], "names no other tenant's objects"


def test_a_newcomer_with_access_never_takes_a_held_branch(rig: Rig, repo_url: str) -> None:
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    victim = _tenant(rig, "victim", repo_url, secret=False)
    rig.burst()
    attacker = _tenant(rig, "aattacker", repo_url, secret=True)
    rig.burst()
    rig.burst()  # a restarted watcher decides the same

    bk = Branch(repo_url, "main").key
    branch = rig.config.branch(bk)
    assert branch is not None and branch.provider_namespace == "victim"
    assert rig.config.target(GitTargetUid(attacker)) is None
    assert rig.config.target(GitTargetUid(victim)) is not None
    rig.cluster.configmap("aattacker", "attacker-payload", {"evil": "1"})
    rig.burst()
    assert not [e for e in rig.events_of(bk) if e.object_id.namespace == "aattacker"]

    # The holder goes: the newcomer's GitTargets are served, with its own settings.
    rig.cluster.delete("gitopsreverser.io/v1alpha1", "GitProvider", "repo", "victim")
    rig.burst()
    branch = rig.config.branch(bk)
    assert branch is not None and branch.provider_namespace == "aattacker"
    assert rig.config.target(GitTargetUid(attacker)) is not None


def test_a_target_held_for_its_key_never_takes_a_branch(rig: Rig, repo_url: str) -> None:
    """T1 with P6: a GitTarget whose only problem is its signing key keeps its place on its
    branch (published ``key_held``), but never holds a branch for its GitProvider while a
    valid GitTarget of another writer names it; it does once it is the branch's only one."""
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    victim = _tenant(rig, "victim", repo_url, secret=False)
    signing = {"commit": {"signing": {"secretRef": {"name": "missing"}}}}
    keyed = _tenant(rig, "aattacker", repo_url, secret=True, target_spec=signing)
    rig.burst()

    bk = Branch(repo_url, "main").key
    branch = rig.config.branch(bk)
    assert branch is not None and branch.provider_namespace == "victim"
    assert rig.config.target(GitTargetUid(keyed)) is None, "not on a branch of another writer"
    assert rig.config.target(GitTargetUid(victim)) is not None
    validated = rig.cluster.conditions("GitTarget", "target", "aattacker")["Validated"]
    assert (validated["status"], validated["reason"]) == ("False", "SigningSecretNotFound")

    rig.cluster.delete("gitopsreverser.io/v1alpha1", "GitProvider", "repo", "victim")
    rig.burst()
    branch = rig.config.branch(bk)
    assert branch is not None and branch.provider_namespace == "aattacker"
    config = rig.config.target(GitTargetUid(keyed))
    assert config is not None and config.key_held
    assert rig.config.has_targets(bk) and rig.config.targets_of(bk) == []


def test_gitproviders_with_one_writer_share_the_branch(rig: Rig, repo_url: str) -> None:
    """No Secret, same committer and templates: nobody's credentials are anyone else's, so
    both namespaces write the one branch (and share its quietness)."""
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    uids = [_tenant(rig, ns, repo_url, secret=False) for ns in ("team-a", "team-b")]
    for ns in ("team-a", "team-b"):
        rig.cluster.configmap(ns, "app", {"ns": ns})
    rig.burst()
    assert all(rig.config.target(GitTargetUid(uid)) is not None for uid in uids)
    mirrored = {e.object_id.namespace for e in rig.events(repo_url)}
    assert mirrored == {"team-a", "team-b"}
    # Another committer is another writer: refused while the branch is held.
    rig.cluster.patch(
        "gitopsreverser.io/v1alpha1",
        "GitProvider",
        "repo",
        "team-b",
        {"spec": {"commit": {"committer": {"name": "Someone Else", "email": "x@y.z"}}}},
    )
    rig.burst()
    assert rig.config.target(GitTargetUid(uids[1])) is None
    assert rig.config.target(GitTargetUid(uids[0])) is not None


def _victims_flux(rig: Rig, url: str) -> None:
    """The victim's Flux pair (the reliability probe's S2): GitRepository ``src`` following
    ``main`` with a day's interval and Kustomization ``ks`` of ``./clusters`` (facts:
    appliers.md F2, F3)."""
    c = rig.cluster
    c.namespace("victim")
    c.create(m.git_repository("victim", "src", url))
    c.create(m.kustomization("victim", "ks", "src", "./clusters"))


def _applier_configured(rig: Rig, ns: str, name: str = "target") -> tuple[str, str, str]:
    found = rig.cluster.conditions("GitTarget", name, ns)["ApplierConfigured"]
    return found["status"], found["reason"], found["message"]


def test_a_gittarget_naming_another_namespaces_kustomization_is_refused(
    rig: Rig, repo_url: str
) -> None:
    """T2, the reliability probe's S2: a GitTarget in ``zattacker`` names ``victim/ks``. With a
    ClusterProvider that admits every namespace but allows no cross-namespace applier, it is
    ApplierConfigured=False CrossNamespaceApplier (it stalls), and the message says how a
    platform admin allows it. (On main before T2 it was True/Configured.)"""
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    _victims_flux(rig, repo_url)
    applier = {"kustomizationRef": {"name": "ks", "namespace": "victim"}, "quietPeriod": "2s"}
    rig.cluster.namespace("zattacker")
    rig.cluster.create(git_provider("zattacker", repo_url))
    rig.cluster.create(git_target("zattacker", applier=applier))
    rig.cluster.create(watch_rule("zattacker", CONFIGMAPS))
    rig.burst()

    status, reason, message = _applier_configured(rig, "zattacker")
    assert (status, reason) == ("False", CROSS_NAMESPACE_APPLIER)
    assert "Kustomization victim/ks" in message
    assert "spec.crossNamespaceAppliers" in message and "ClusterProvider default" in message
    stalled = rig.cluster.conditions("GitTarget", "target", "zattacker")["Stalled"]
    assert (stalled["status"], stalled["reason"]) == ("True", CROSS_NAMESPACE_APPLIER)


def test_a_cross_namespace_applier_is_configured_only_where_the_cluster_provider_allows_it(
    rig: Rig, repo_url: str
) -> None:
    """T2: ``crossNamespaceAppliers`` allows the appliers of ``victim`` for namespace
    ``team-a`` only: team-a's GitTarget is Configured, team-b's stays refused; the allowance
    withdrawn, team-a's is refused again on the next pass."""
    allowed = [{"namespace": "victim", "accessFrom": {"names": ["team-a"]}}]
    rig.cluster.create(
        cluster_provider(accessFrom={"selector": {}}, crossNamespaceAppliers=allowed)
    )
    _victims_flux(rig, repo_url)
    applier = {"kustomizationRef": {"name": "ks", "namespace": "victim"}}
    for ns in ("team-a", "team-b"):
        rig.cluster.namespace(ns)
        rig.cluster.create(git_provider(ns, repo_url))
        rig.cluster.create(git_target(ns, applier=applier))
    rig.burst()

    assert _applier_configured(rig, "team-a")[:2] == ("True", "Configured")
    assert _applier_configured(rig, "team-b")[:2] == ("False", CROSS_NAMESPACE_APPLIER)

    rig.cluster.patch(
        "gitopsreverser.io/v1alpha1",
        "ClusterProvider",
        "default",
        None,
        {"spec": {"crossNamespaceAppliers": None}},
    )
    rig.burst()
    assert _applier_configured(rig, "team-a")[:2] == ("False", CROSS_NAMESPACE_APPLIER)
