"""ApplierConfigured's rules as pure decisions (behaviour.md §6 S2), one test per reason.

Flux object shapes and semantics follow ../shared/facts/appliers.md F2 (GitRepository:
``spec.url``, ``spec.interval``, ``spec.ref`` precedence commit > name > semver > tag > branch,
default branch ``master``) and F3 (Kustomization: ``spec.sourceRef`` whose namespace defaults
to the Kustomization's, ``spec.path`` defaulting to the artifact root); Argo CD's from A1
(``spec.sources`` wins over ``spec.source``; ``IsAutomatedSyncEnabled`` = automated set and
``enabled`` not false).
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.applier_check import (
    FluxFound,
    Permission,
    Subject,
    admission,
    check_flux,
    covers,
    flux_permissions,
    followed_ref,
    source_ref,
)
from shared.decide.argo_check import (
    ArgoFound,
    argo_permissions,
    automated_sync,
    check_argo,
)
from shared.decide.conditions import Wanted
from shared.model.config import ApplierRef
from shared.model.crds import parse_cluster_provider

URL = "https://git.example.org/team/config.git"
HOUR = 3600.0
KS_REF = ApplierRef("Kustomization", "flux-system", "apps", "default")
APP_REF = ApplierRef("Application", "argocd", "web", "default")


def _subject(ref: ApplierRef = KS_REF, path: str = "clusters/prod/apps") -> Subject:
    return Subject("team-a", URL, "main", path, ref)


def _kustomization(path: str | None = "./clusters/prod", **source: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": "10m",
        "prune": True,
        "sourceRef": {"kind": "GitRepository", "name": "config", **source},
    }
    if path is not None:
        spec["path"] = path
    return {"metadata": {"namespace": "flux-system", "name": "apps"}, "spec": spec}


def _gitrepository(
    url: str = URL, interval: str = "24h", ref: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": url, "interval": interval}
    spec["ref"] = {"branch": "main"} if ref is None else ref
    return {"metadata": {"namespace": "flux-system", "name": "config"}, "spec": spec}


def _all_allowed(ref: ApplierRef, kustomization: dict[str, Any]) -> dict[Permission, bool]:
    return {p: True for p in flux_permissions(ref, source_ref(kustomization))}


def _flux(
    kustomization: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
    allowed: dict[Permission, bool] | None = None,
    subject: Subject | None = None,
) -> Wanted:
    ks = kustomization if kustomization is not None else _kustomization()
    repo = source if source is not None else _gitrepository()
    grants = allowed if allowed is not None else _all_allowed(KS_REF, ks)
    return check_flux(subject or _subject(), FluxFound(ks, repo, grants), HOUR)


def test_a_correct_flux_pair_is_configured() -> None:
    """S2: every Flux rule holds -> ApplierConfigured True/Configured."""
    wanted = _flux()
    assert (wanted.type, wanted.status, wanted.reason) == (
        "ApplierConfigured",
        "True",
        "Configured",
    )


def test_missing_kustomization_or_gitrepository_is_applier_not_found() -> None:
    """S2 ApplierNotFound: the Kustomization, or the GitRepository it names (F3 sourceRef)."""
    missing = check_flux(_subject(), FluxFound(None, None, {}), HOUR)
    assert (missing.status, missing.reason) == ("False", "ApplierNotFound")
    assert "Kustomization flux-system/apps" in missing.message
    no_source = check_flux(_subject(), FluxFound(_kustomization(), None, {}), HOUR)
    assert (no_source.status, no_source.reason) == ("False", "ApplierNotFound")
    assert "GitRepository flux-system/config not found" in no_source.message


def test_source_ref_namespace_defaults_to_the_kustomizations() -> None:
    """F3: ``sourceRef.namespace`` is optional; absent, the Kustomization's own namespace."""
    assert source_ref(_kustomization()).namespace == "flux-system"
    assert source_ref(_kustomization(namespace="sources")).namespace == "sources"


@pytest.mark.parametrize(
    ("ref", "follows"),
    [
        ({"branch": "main"}, "refs/heads/main"),
        ({}, "refs/heads/master"),
        ({"name": "refs/heads/main"}, "refs/heads/main"),
        ({"branch": "main", "name": "refs/heads/dev"}, "refs/heads/dev"),
        ({"branch": "main", "tag": "v1"}, "tag v1"),
        ({"tag": "v1", "semver": ">=1.0"}, "semver >=1.0"),
        ({"name": "refs/heads/main", "semver": ">=1.0"}, "refs/heads/main"),
        ({"branch": "main", "commit": "a" * 40}, "commit " + "a" * 40),
    ],
)
def test_followed_ref_uses_fluxs_precedence(ref: dict[str, str], follows: str) -> None:
    """F2: ``spec.ref`` precedence, lowest first: branch < tag < semver < name < commit;
    absent, branch ``master``; a commit pins the source even together with a branch."""
    assert followed_ref(_gitrepository(ref=ref)) == follows


@pytest.mark.parametrize(
    "source",
    [
        _gitrepository(ref={"branch": "dev"}),
        _gitrepository(ref={}),
        _gitrepository(ref={"name": "refs/heads/dev"}),
        _gitrepository(ref={"branch": "main", "commit": "b" * 40}),
        _gitrepository(ref={"branch": "main", "tag": "v1.0.0"}),
        _gitrepository(url="https://git.example.org/team/other.git"),
    ],
)
def test_a_source_on_another_repository_or_ref_is_a_source_mismatch(
    source: dict[str, Any],
) -> None:
    """S2 SourceMismatch: the GitRepository must follow this repository and branch (F2)."""
    wanted = _flux(source=source)
    assert (wanted.status, wanted.reason) == ("False", "SourceMismatch")
    assert "flux-system/config follows" in wanted.message


def test_the_mismatch_message_names_what_the_source_follows() -> None:
    """S2: the message says what the GitRepository follows instead."""
    wanted = _flux(source=_gitrepository(ref={"branch": "dev"}))
    assert wanted.message == (
        "GitRepository flux-system/config follows refs/heads/dev, not branch main"
    )


def test_the_same_repository_spelled_differently_matches() -> None:
    """behaviour.md §0: URLs compare normalised (case of scheme and host, ``.git``, ``/``);
    ``spec.ref.name: refs/heads/<branch>`` follows the branch as well (F2)."""
    source = _gitrepository(
        url="HTTPS://Git.Example.org/team/config/", ref={"name": "refs/heads/main"}
    )
    assert _flux(source=source).reason == "Configured"


def test_a_kustomization_reading_another_source_kind_is_a_source_mismatch() -> None:
    """F3: ``sourceRef.kind`` may be OCIRepository, Bucket, ...; only a GitRepository follows
    our branch."""
    ks = _kustomization(kind="OCIRepository")
    wanted = check_flux(_subject(), FluxFound(ks, None, {}), HOUR)
    assert (wanted.status, wanted.reason) == ("False", "SourceMismatch")
    assert "OCIRepository" in wanted.message


@pytest.mark.parametrize("interval", ["1m", "59m59s", "not-a-duration"])
def test_a_source_that_fetches_on_its_own_is_refused(interval: str) -> None:
    """S2 SourceFetchesOnItsOwn: F2 says a GitRepository fetches every ``spec.interval``
    (±5% jitter) and a new revision wakes every Kustomization at once, so the interval must
    be long (at least ``min_source_interval``, here 1h)."""
    wanted = _flux(source=_gitrepository(interval=interval))
    assert (wanted.status, wanted.reason) == ("False", "SourceFetchesOnItsOwn")
    assert "at least 1h" in wanted.message


def test_an_interval_of_exactly_the_minimum_is_enough() -> None:
    """S2: "at least" the setting (1h, or 60m spelled another way)."""
    assert _flux(source=_gitrepository(interval="60m")).reason == "Configured"


@pytest.mark.parametrize(
    ("outer", "inner", "ok"),
    [
        ("./clusters/prod", "clusters/prod", True),
        ("./clusters/prod/", "clusters/prod/apps", True),
        ("clusters/prod", "clusters/production", False),
        ("./", "anything/below", True),
        ("", "x", True),
        (".", ".", True),
        ("./clusters/prod", ".", False),
        ("./clusters/prod/apps", "clusters/prod", False),
    ],
)
def test_path_coverage(outer: str, inner: str, ok: bool) -> None:
    """F3: ``spec.path`` is a folder of the artifact (default its root), usually written
    ``./x``; it covers the GitTarget's path when that is the same folder or inside it."""
    assert covers(outer, inner) is ok


def test_a_kustomization_that_does_not_hold_the_folder_is_path_not_covered() -> None:
    """S2 PathNotCovered; a Kustomization without spec.path applies the root (F3)."""
    wanted = _flux(kustomization=_kustomization(path="./clusters/staging"))
    assert (wanted.status, wanted.reason) == ("False", "PathNotCovered")
    assert "clusters/prod/apps" in wanted.message
    assert _flux(kustomization=_kustomization(path=None)).reason == "Configured"


def test_missing_permissions_are_access_denied_and_named() -> None:
    """S2 AccessDenied: we must be allowed get and patch on both objects (O4)."""
    ks = _kustomization()
    grants = _all_allowed(KS_REF, ks)
    patch_repo = Permission(
        "patch", "source.toolkit.fluxcd.io", "gitrepositories", "flux-system", "config"
    )
    assert patch_repo in grants
    grants[patch_repo] = False
    wanted = _flux(kustomization=ks, allowed=grants)
    assert (wanted.status, wanted.reason) == ("False", "AccessDenied")
    assert wanted.message == (
        "not allowed to patch gitrepositories.source.toolkit.fluxcd.io flux-system/config"
    )
    assert _flux(kustomization=ks, allowed={}).reason == "AccessDenied"


def test_flux_permissions_cover_get_and_patch_of_both_objects() -> None:
    """O4: the Flux grant is get and patch on Kustomizations and GitRepositories."""
    perms = flux_permissions(KS_REF, source_ref(_kustomization(namespace="sources")))
    assert {(p.verb, p.resource, p.namespace) for p in perms} == {
        ("get", "kustomizations", "flux-system"),
        ("patch", "kustomizations", "flux-system"),
        ("get", "gitrepositories", "sources"),
        ("patch", "gitrepositories", "sources"),
    }


def test_configuration_problems_are_reported_before_permissions() -> None:
    """S2: a person fixes one thing at a time; the configuration comes first."""
    wanted = _flux(source=_gitrepository(ref={"branch": "dev"}), allowed={})
    assert wanted.reason == "SourceMismatch"


def _application(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
        "source": {"repoURL": URL, "path": "clusters/prod", "targetRevision": "main"},
        **spec,
    }
    return {"metadata": {"namespace": "argocd", "name": "web"}, "spec": body}


def _argo(application: dict[str, Any] | None, allowed: bool = True) -> Wanted:
    grants = {p: allowed for p in argo_permissions(APP_REF)}
    return check_argo(_subject(APP_REF), ArgoFound(application, grants))


def test_a_correct_application_is_configured() -> None:
    """S2 Argo CD: single source on this repository and branch, automated sync off."""
    assert _argo(_application()).reason == "Configured"
    revision = {"repoURL": URL, "targetRevision": "refs/heads/main"}
    assert _argo(_application(source=revision)).reason == "Configured"


def test_a_missing_application_is_applier_not_found() -> None:
    """S2 ApplierNotFound for an Application."""
    wanted = _argo(None)
    assert (wanted.status, wanted.reason) == ("False", "ApplierNotFound")


@pytest.mark.parametrize(
    "spec",
    [
        {"sources": [{"repoURL": URL, "targetRevision": "main"}]},
        {"source": {"repoURL": URL, "targetRevision": "dev"}},
        {"source": {"repoURL": URL}},
        {"source": {"repoURL": "https://git.example.org/team/other", "targetRevision": "main"}},
    ],
)
def test_an_application_on_another_source_is_a_source_mismatch(spec: dict[str, Any]) -> None:
    """S2 SourceMismatch; facts appliers.md A1: a non-empty ``spec.sources`` wins over
    ``spec.source``, and an omitted ``targetRevision`` means HEAD, not our branch."""
    wanted = _argo(_application(**spec))
    assert (wanted.status, wanted.reason) == ("False", "SourceMismatch")


@pytest.mark.parametrize(
    ("automated", "enabled"),
    [
        (None, False),
        ({}, True),
        ({"prune": True}, True),
        ({"enabled": True}, True),
        ({"enabled": False, "prune": True}, False),
    ],
)
def test_automated_sync_follows_argo_cds_rule(automated: Any, enabled: bool) -> None:
    """Facts appliers.md A1: ``IsAutomatedSyncEnabled()`` is
    ``automated != nil && (enabled == nil || *enabled)``."""
    policy = {} if automated is None else {"automated": automated}
    assert automated_sync({"syncPolicy": policy}) is enabled
    wanted = _argo(_application(syncPolicy=policy))
    assert wanted.reason == ("AutomatedSyncEnabled" if enabled else "Configured")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("clusters/prod/apps", "Configured"),
        ("./clusters/prod", "Configured"),
        ("", "Configured"),
        ("clusters/staging", "PathNotCovered"),
        ("clusters/prod/apps/web", "PathNotCovered"),
    ],
)
def test_an_application_must_apply_the_gittargets_folder(path: str, reason: str) -> None:
    """S2 as the Flux rule: ``spec.source.path`` is the GitTarget's folder or a parent of it
    (the repository root covers everything); checked after automated sync, before access."""
    source = {"repoURL": URL, "path": path, "targetRevision": "main"}
    wanted = _argo(_application(source=source), allowed=False)
    assert wanted.reason == (reason if reason != "Configured" else "AccessDenied")
    assert _argo(_application(source=source)).reason == reason
    automated = _argo(_application(source=source, syncPolicy={"automated": {}}))
    assert automated.reason == "AutomatedSyncEnabled"


def test_an_application_we_may_not_update_is_access_denied() -> None:
    """S2: we must be allowed to update the Application (O4: get, update)."""
    wanted = _argo(_application(), allowed=False)
    assert (wanted.status, wanted.reason) == ("False", "AccessDenied")
    assert "update applications.argoproj.io argocd/web" in wanted.message


def test_admission_by_the_appliers_cluster_provider() -> None:
    """S2 NotAdmitted: the applier's ClusterProvider must admit the GitTarget's namespace
    (behaviour.md §1 ClusterProvider: accessFrom absent admits nothing)."""
    allowed = [{"namespace": "flux-system", "accessFrom": {"names": ["team-a"]}}]
    spec = {"accessFrom": {"names": ["team-a"]}, "crossNamespaceAppliers": allowed}
    admitting = parse_cluster_provider({"metadata": {"name": "hub"}, "spec": spec})
    closed = parse_cluster_provider(
        {"metadata": {"name": "hub"}, "spec": {"crossNamespaceAppliers": allowed}}
    )
    assert admission(_subject(), admitting, {}) is None
    refused = admission(_subject(), closed, {})
    assert refused is not None
    assert (refused.status, refused.reason) == ("False", "NotAdmitted")
    gone = admission(_subject(), None, {})
    assert gone is not None
    assert (gone.status, gone.reason) == ("False", "ClusterProviderNotFound")
