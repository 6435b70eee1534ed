"""The applier interface (issue 8): one module per kind, chosen by kind in one place, no I/O.

A fake cluster client stands in for ``shared.kube.api.KubeClient`` (only get, path, request and
ssar are used), so these tests show what each module reads, stamps and asks. Flux shapes follow
../shared/facts/appliers.md F1-F3, Argo CD's A1-A3.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from shared.appliers import Busy, Refused, UnknownApplierKind, Unneeded, for_kind
from shared.appliers.argocd import ArgoPending, ArgoSent
from shared.appliers.flux import FluxPending
from shared.decide.applier_check import Subject
from shared.kube.api import KubeClient
from shared.kube.errors import Conflict, NotFound
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.model.resources import ApiResource

URL = "https://git.example.org/team/config.git"
COMMIT = "c" * 40
OLD = "0" * 40
KS = ApplierRef("Kustomization", "flux-system", "apps", "default")
APP = ApplierRef("Application", "argocd", "web", "default")
HOUR = 3600.0


class FakeCluster:
    """Objects by (plural, namespace, name); records every write and access question."""

    def __init__(self, *objects: dict[str, Any], allowed: bool = True) -> None:
        self.objects = {
            (_plural(o["kind"]), o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in objects
        }
        self.allowed = allowed
        self.writes: list[tuple[str, str, Any]] = []
        self.asked: list[str] = []

    def get(self, res: ApiResource, namespace: str, name: str) -> dict[str, Any]:
        try:
            return copy.deepcopy(self.objects[(res.resource, namespace, name)])
        except KeyError:
            raise NotFound(f"{res.resource} {namespace}/{name} not found", 404) from None

    def path(self, res: ApiResource, namespace: str = "", name: str = "") -> str:
        return f"{res.resource}/{namespace}/{name}"

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        self.writes.append((method, path, body))
        return body

    def update(self, res: ApiResource, body: dict[str, Any], field_manager: str) -> Any:
        """A PUT guarded by the resourceVersion, as the API server guards it (409)."""
        meta = body["metadata"]
        key = (res.resource, meta["namespace"], meta["name"])
        stored = self.objects[key]["metadata"].get("resourceVersion")
        if meta.get("resourceVersion") != stored:
            raise Conflict(f"409 the object has been modified ({stored})", 409)
        self.writes.append(("put", "/".join(key), body))
        written = copy.deepcopy(body)
        written["metadata"]["resourceVersion"] = str(int(stored or 0) + 1)
        self.objects[key] = written
        return copy.deepcopy(written)

    def ssar(self, verb: str, group: str, resource: str, namespace: str, name: str = "") -> bool:
        self.asked.append(f"{verb} {resource}")
        return self.allowed

    def client(self) -> KubeClient:
        return cast(KubeClient, self)


def _plural(kind: str) -> str:
    return {
        "Kustomization": "kustomizations",
        "GitRepository": "gitrepositories",
        "Application": "applications",
    }[kind]


def kustomization(attempted: str = "", handled: str = "", ready: str = "True") -> dict[str, Any]:
    return {
        "kind": "Kustomization",
        "metadata": {"namespace": "flux-system", "name": "apps"},
        "spec": {
            "interval": "10m",
            "path": "./clusters",
            "sourceRef": {"kind": "GitRepository", "name": "config"},
        },
        "status": {
            "lastAttemptedRevision": attempted,
            "lastHandledReconcileAt": handled,
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def gitrepository(ref: dict[str, str] | None, revision: str = f"main@sha1:{OLD}") -> dict[str, Any]:
    spec: dict[str, Any] = {"url": URL, "interval": "24h"}
    if ref is not None:
        spec["ref"] = ref
    return {
        "kind": "GitRepository",
        "metadata": {"namespace": "flux-system", "name": "config"},
        "spec": spec,
        "status": {"artifact": {"revision": revision}},
    }


def request(applier: ApplierRef = KS, branch: str = "main") -> ApplyRequest:
    return ApplyRequest("tok-1", "bk", URL, branch, COMMIT, {}, applier, 0.0)


def test_each_kind_has_its_module_and_an_unknown_kind_is_refused_in_one_place() -> None:
    """Issue 8 item 2: ``for_kind`` is the only map from ``spec.applier``'s kind."""
    assert (for_kind("Kustomization").kind, for_kind("Kustomization").product) == (
        "Kustomization",
        "Flux",
    )
    assert (for_kind("Application").kind, for_kind("Application").product) == (
        "Application",
        "Argo CD",
    )
    with pytest.raises(UnknownApplierKind, match="'HelmRelease'"):
        for_kind("HelmRelease")


@pytest.mark.parametrize(
    ("ref", "branch"),
    [
        ({"branch": "main"}, "main"),
        ({"branch": "main", "commit": OLD}, "main"),
        ({"branch": "main", "tag": "v1"}, "main"),
        (None, "master"),
        (None, "main"),
        ({"name": "refs/heads/main"}, "main"),
    ],
)
def test_the_check_and_the_attempt_judge_a_source_alike(
    ref: dict[str, str] | None, branch: str
) -> None:
    """D4 (audit probe 1): ApplierConfigured and the dispatcher read the same objects and
    apply the same source rule, so an attempt is refused exactly when the check says
    SourceMismatch, with the same message."""
    cluster = FakeCluster(kustomization(), gitrepository(ref))
    flux = for_kind("Kustomization")
    subject = Subject("team-a", URL, branch, "clusters/prod", KS)
    verdict = flux.validate(cluster.client(), subject, HOUR)
    read = flux.read(cluster.client(), request(branch=branch))
    if verdict.reason == "SourceMismatch":
        assert isinstance(read, Refused)
        assert read.message == f"SourceMismatch: {verdict.message}"
    else:
        assert verdict.reason == "Configured", verdict.message
        assert isinstance(read, FluxPending)
    assert cluster.writes == []


def test_a_missing_kustomization_refuses_the_attempt_as_applier_not_found() -> None:
    """D4: nothing to ask; the message names the reason ApplierConfigured would give."""
    read = for_kind("Kustomization").read(FakeCluster().client(), request())
    assert read == Refused("ApplierNotFound: Kustomization flux-system/apps not found")


def test_a_source_that_lacks_the_commit_is_stamped_alone_then_handled_once_attempted() -> None:
    """D4: the GitRepository is stamped (never both objects); D6: handled once the
    Kustomization attempted a revision of the commit and that reconcile ended (Ready is True
    or False, no longer Unknown: facts F3 write ``lastAttemptedRevision`` before the apply)."""
    cluster = FakeCluster(kustomization(), gitrepository({"branch": "main"}))
    pending = for_kind("Kustomization").read(cluster.client(), request())
    assert isinstance(pending, FluxPending)
    sent = pending.request(["ForeignCommit"], "tok-1")
    assert not isinstance(sent, Unneeded) and sent.plan == "stamp-source"
    annotation = {"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "tok-1"}}}
    assert cluster.writes == [("patch", "gitrepositories/flux-system/config", annotation)]
    assert not sent.handled()
    for ready, handled in (("Unknown", False), ("True", True), ("False", True)):
        cluster.objects[("kustomizations", "flux-system", "apps")] = kustomization(
            attempted=f"main@sha1:{COMMIT}", ready=ready
        )
        assert sent.handled() is handled, ready


def _fetched(revision: str, handled: str, ready: str = "True") -> dict[str, Any]:
    """The GitRepository after a reconcile that handled ``handled`` and ended ``ready``."""
    source = gitrepository({"branch": "main"}, revision)
    source["metadata"]["generation"] = 2
    source["status"].update(
        lastHandledReconcileAt=handled,
        observedGeneration=2,
        conditions=[{"type": "Ready", "status": ready}],
    )
    return source


def test_a_source_stamp_is_handled_by_the_apply_of_a_newer_artifact_fetched_after_it() -> None:
    """D6, issue 12: an outside push landed before the source fetched, so the Kustomization
    applies a newer revision than the commit. The source's ``lastHandledReconcileAt`` carries
    our stamp and its Ready is True: its artifact holds the commit, and the end of the
    Kustomization's reconcile of that artifact finishes the request; the outcome names the
    revision Flux applied."""
    newer = "main@sha1:" + "e" * 40
    cluster = FakeCluster(kustomization(), gitrepository({"branch": "main"}))
    pending = for_kind("Kustomization").read(cluster.client(), request())
    assert isinstance(pending, FluxPending)
    sent = pending.request(["ForeignCommit"], "tok-1")
    assert not isinstance(sent, Unneeded)
    ks = ("kustomizations", "flux-system", "apps")
    repo = ("gitrepositories", "flux-system", "config")
    cluster.objects[repo] = _fetched(newer, handled="other")  # a fetch before our stamp
    cluster.objects[ks] = kustomization(attempted=newer, ready="True")
    assert not sent.handled()
    cluster.objects[repo] = _fetched(newer, handled="tok-1", ready="False")  # fetch failed
    assert not sent.handled()
    cluster.objects[repo] = _fetched(newer, handled="tok-1")
    cluster.objects[ks] = kustomization(attempted=f"main@sha1:{OLD}", ready="True")
    assert not sent.handled()  # the Kustomization has not attempted the new artifact yet
    cluster.objects[ks] = kustomization(attempted=newer, ready="Unknown")
    assert not sent.handled()  # it is applying it (W1 stays open)
    cluster.objects[repo] = _fetched(newer, handled="receiver")  # a later stamp replaced ours
    cluster.objects[ks] = kustomization(attempted=newer, ready="True")
    assert sent.handled()
    assert sent.plan == f"stamp-source; applied {newer}"


def test_the_proof_that_the_source_fetched_after_the_stamp_is_kept_for_the_attempt() -> None:
    """D6: once one read proved the source fetched after our stamp, a read that finds no
    artifact revision (a reconcile in between) does not forget the proof; without it, a later
    stamp that replaced ours left the attempt waiting until its deadline (Failed)."""
    newer = "main@sha1:" + "e" * 40
    cluster = FakeCluster(kustomization(), gitrepository({"branch": "main"}))
    pending = for_kind("Kustomization").read(cluster.client(), request())
    assert isinstance(pending, FluxPending)
    sent = pending.request(["ForeignCommit"], "tok-1")
    assert not isinstance(sent, Unneeded)
    ks = ("kustomizations", "flux-system", "apps")
    repo = ("gitrepositories", "flux-system", "config")
    cluster.objects[repo] = _fetched(newer, handled="tok-1")
    cluster.objects[ks] = kustomization(attempted=f"main@sha1:{OLD}", ready="True")
    assert not sent.handled()  # proved; the Kustomization has not attempted it yet
    cluster.objects[repo] = _fetched("", handled="tok-1")
    assert not sent.handled()  # no artifact revision in this read
    cluster.objects[repo] = _fetched(newer, handled="receiver")  # a later stamp replaced ours
    cluster.objects[ks] = kustomization(attempted=newer, ready="True")
    assert sent.handled()


def test_a_refusal_at_the_artifacts_commit_stamps_the_kustomization() -> None:
    """D4: the artifact holds the commit, so only a Refusal asks for anything: a
    Kustomization stamp, handled when ``lastHandledReconcileAt`` carries its token (D6)."""
    cluster = FakeCluster(kustomization(), gitrepository(None, f"master@sha1:{COMMIT}"))
    pending = for_kind("Kustomization").read(cluster.client(), request(branch="master"))
    assert isinstance(pending, FluxPending)
    sent = pending.request(["Refusal"], "tok-2")
    assert not isinstance(sent, Unneeded) and sent.plan == "stamp-kustomization"
    assert [path for _, path, _ in cluster.writes] == ["kustomizations/flux-system/apps"]
    cluster.objects[("kustomizations", "flux-system", "apps")] = kustomization(handled="tok-2")
    assert sent.handled()


def test_an_artifact_that_holds_the_commit_stamps_nothing() -> None:
    """D4's third plan (audit D4): a ForeignCommit or CatchUp already in the artifact."""
    cluster = FakeCluster(kustomization(), gitrepository({"branch": "main"}, f"sha1:{COMMIT}"))
    pending = for_kind("Kustomization").read(cluster.client(), request())
    assert isinstance(pending, FluxPending)
    sent = pending.request(["ForeignCommit", "CatchUp"], "tok-3")
    assert sent == Unneeded("the artifact already holds the commit")
    assert cluster.writes == []


def test_access_is_asked_only_once_the_configuration_holds() -> None:
    """S2: SelfSubjectAccessReviews only when nothing else is wrong; a denial is
    AccessDenied naming what we may not do."""
    broken = FakeCluster(kustomization(), gitrepository({"branch": "dev"}), allowed=False)
    subject = Subject("team-a", URL, "main", "clusters/prod", KS)
    assert for_kind("Kustomization").validate(broken.client(), subject, HOUR).reason == (
        "SourceMismatch"
    )
    assert broken.asked == []
    denied = FakeCluster(kustomization(), gitrepository({"branch": "main"}), allowed=False)
    verdict = for_kind("Kustomization").validate(denied.client(), subject, HOUR)
    assert (verdict.status, verdict.reason) == ("False", "AccessDenied")
    assert "patch gitrepositories.source.toolkit.fluxcd.io flux-system/config" in verdict.message
    assert len(denied.asked) == 4


def application(**spec: Any) -> dict[str, Any]:
    body = {
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
        "source": {"repoURL": URL, "targetRevision": "main", "path": "x"},
        "syncPolicy": {"automated": {"enabled": False, "prune": True}},
        **spec,
    }
    return {
        "kind": "Application",
        "metadata": {"namespace": "argocd", "name": "web", "resourceVersion": "7"},
        "spec": body,
    }


def _app(cluster: FakeCluster) -> dict[str, Any]:
    return cluster.objects[("applications", "argocd", "web")]


def test_an_application_is_checked_and_access_is_get_and_update() -> None:
    """S2 for Argo CD: configured, after asking exactly get and update (O4)."""
    cluster = FakeCluster(application())
    subject = Subject("team-a", URL, "main", "x", APP)
    assert for_kind("Application").validate(cluster.client(), subject, HOUR).reason == (
        "Configured"
    )
    assert cluster.asked == ["get applications", "update applications"]


def test_a_request_sets_the_pinned_operation_with_one_guarded_update() -> None:
    """D5: one PUT of the whole Application (the resourceVersion read), operation set,
    operationState cleared; D6: handled once our token's state completed."""
    app = application()
    app["status"] = {"operationState": {"phase": "Succeeded", "operation": {"sync": {}}}}
    cluster = FakeCluster(app)
    pending = for_kind("Application").read(cluster.client(), request(APP))
    assert isinstance(pending, ArgoPending)
    sent = pending.request(["ForeignCommit"], "tok-9")
    assert isinstance(sent, ArgoSent) and sent.plan == f"sync {COMMIT[:12]}"
    [(method, path, body)] = cluster.writes
    assert (method, path, body["metadata"]["resourceVersion"]) == (
        "put",
        "applications/argocd/web",
        "7",
    )
    assert body["operation"]["sync"]["revision"] == COMMIT
    assert body["operation"]["sync"]["prune"] is True
    assert body["operation"]["initiatedBy"] == {"username": "gitops-reverser", "automated": True}
    assert {"name": "gitops-reverser/token", "value": "tok-9"} in body["operation"]["info"]
    assert "operationState" not in body["status"]
    assert not sent.handled()
    stored = _app(cluster)
    stored["status"] = {
        "operationState": {"phase": "Running", "operation": stored.pop("operation")}
    }
    assert not sent.handled()
    stored["status"]["operationState"]["phase"] = "Error"
    stored["status"]["operationState"]["message"] = "ComparisonError"
    assert sent.handled()
    assert sent.plan == f"sync {COMMIT[:12]}; sync Error: ComparisonError"


def test_a_running_operation_makes_the_read_busy_and_nothing_is_written() -> None:
    """D5: never replace an operation; the dispatcher reads again."""
    app = application()
    app["operation"] = {"sync": {"revision": OLD}, "initiatedBy": {"username": "alice"}}
    cluster = FakeCluster(app)
    read = for_kind("Application").read(cluster.client(), request(APP))
    assert read == Busy("Application argocd/web: an operation is set (by alice), not started yet")
    assert cluster.writes == []


def test_a_lost_race_is_a_conflict_to_read_again() -> None:
    """D5: the Application changed between read and update (409): nothing is written and
    the attempt reads again."""
    cluster = FakeCluster(application())
    pending = for_kind("Application").read(cluster.client(), request(APP))
    assert isinstance(pending, ArgoPending)
    _app(cluster)["metadata"]["resourceVersion"] = "8"
    sent = pending.request(["ForeignCommit"], "tok")
    assert isinstance(sent, Busy) and sent.conflict
    assert cluster.writes == [] and "operation" not in _app(cluster)
    again = for_kind("Application").read(cluster.client(), request(APP))
    assert isinstance(again, ArgoPending)
    assert isinstance(again.request(["ForeignCommit"], "tok"), ArgoSent)


def test_a_commit_already_synced_is_unneeded_unless_refused() -> None:
    """The Unneeded case (shared.appliers.argocd docstring): no Refusal, and the last
    operation finished a sync of this very commit."""
    app = application()
    app["status"] = {"operationState": {"phase": "Succeeded", "syncResult": {"revision": COMMIT}}}
    cluster = FakeCluster(app)
    pending = for_kind("Application").read(cluster.client(), request(APP))
    assert isinstance(pending, ArgoPending)
    assert pending.request(["ForeignCommit"], "t") == Unneeded(
        f"the Application already synced {COMMIT[:12]}"
    )
    assert cluster.writes == []
    assert isinstance(pending.request(["Refusal"], "t"), ArgoSent)


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"syncPolicy": {"automated": {"prune": True}}}, "AutomatedSyncEnabled"),
        ({"source": {"repoURL": URL, "targetRevision": "dev"}}, "SourceMismatch"),
        ({"sources": [{"repoURL": URL, "targetRevision": "main"}]}, "SourceMismatch"),
    ],
)
def test_the_attempt_refuses_what_the_check_stalls(spec: dict[str, Any], reason: str) -> None:
    """D5 judged by S2's rule: automated sync on, or another source, is refused before any
    write, with the message ApplierConfigured gives."""
    cluster = FakeCluster(application(**spec))
    subject = Subject("team-a", URL, "main", "x", APP)
    verdict = for_kind("Application").validate(cluster.client(), subject, HOUR)
    read = for_kind("Application").read(cluster.client(), request(APP))
    assert verdict.reason == reason
    assert read == Refused(f"{reason}: {verdict.message}")
    assert cluster.writes == []


def test_a_missing_application_is_refused_as_applier_not_found() -> None:
    read = for_kind("Application").read(FakeCluster().client(), request(APP))
    assert read == Refused("ApplierNotFound: Application argocd/web not found")
