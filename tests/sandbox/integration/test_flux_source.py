"""The source-controller double: GitRepository fetches, revisions, wakes, suspend, failures.

Driven deterministically with ``reconcile_due()`` and an injected clock: each call lists the
objects (the F1 predicates decide what a change wakes) and reconciles what is due now.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.flux import FluxControllers
from sandbox.flux.activity import FAILED, FETCHED, SUSPENDED, UP_TO_DATE
from tests.sandbox.integration.flux_support import (
    NAMESPACE,
    REQUESTED_AT,
    SOURCE,
    FakeClock,
    FluxEnv,
    config_map,
    open_env,
)

pytestmark = pytest.mark.integration

START = "2023-11-14T22:13:20Z"  # FakeClock's default time, as metav1.Time prints it


@pytest.fixture
def env(tmp_path: Path, clock: FakeClock) -> Iterator[FluxEnv]:
    yield from open_env(tmp_path, clock=clock)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in obj["status"].get("conditions", []) if c["type"] == kind]
    assert found, f"no {kind} condition in {obj['status']}"
    return found[0]


def actions(records: list[Any]) -> list[tuple[str, str]]:
    return [(r.action, r.revision) for r in records]


def test_artifact_revision_is_branch_at_sha1_with_stored_tarball(
    env: FluxEnv, tmp_path: Path
) -> None:
    """A branch ref publishes ``main@sha1:<40 hex>`` and the artifact fields.

    Fact: ../shared/facts/appliers.md F2 "Artifact revision format" (source-controller
    ``commitReference``, fluxcd/pkg ``git/git.go``), ``status.artifact`` fields (fluxcd/pkg
    ``apis/meta/artifact.go``) and the conditions Ready/ArtifactInStorage True ``Succeeded``
    "stored artifact for revision '<rev>'" (``docs/spec/v1/gitrepositories.md`` §Conditions).
    """
    env.create_source()
    records = env.flux.reconcile_due()
    head = env.head()
    revision = f"main@sha1:{head}"
    assert actions(records) == [(FETCHED, revision)]
    obj = env.get(SOURCE)
    artifact = obj["status"]["artifact"]
    assert artifact["revision"] == revision
    assert artifact["path"] == f"gitrepository/{NAMESPACE}/app/{head}.tar.gz"
    assert artifact["url"].endswith("/" + artifact["path"])
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", artifact["digest"])
    assert artifact["lastUpdateTime"] == START
    for kind in ("Ready", "ArtifactInStorage"):
        found = condition(obj, kind)
        assert (found["status"], found["reason"]) == ("True", "Succeeded")
        assert found["message"] == f"stored artifact for revision '{revision}'"
    assert obj["status"]["observedGeneration"] == 1
    with tarfile.open(tmp_path / "flux" / "storage" / artifact["path"]) as tar:
        assert (
            tar.extractfile("deploy/app.yaml").read()
            == config_map(  # type: ignore[union-attr]
                "app", {"color": "blue"}
            ).encode()
        )


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"name": "refs/heads/main"}, "refs/heads/main@sha1:{second}"),
        ({"commit": "{first}"}, "sha1:{first}"),
        ({"branch": "main", "commit": "{first}"}, "main@sha1:{first}"),
        ({"tag": "v1.0.0"}, "v1.0.0@sha1:{first}"),
    ],
)
def test_ref_kinds_and_precedence(env: FluxEnv, ref: dict[str, str], expected: str) -> None:
    """Full ref name, commit, branch+commit and (annotated, peeled) tag revisions.

    Fact: ../shared/facts/appliers.md F2: precedence ``branch`` < ``tag`` < ``semver`` <
    ``name`` < ``commit`` (source-controller ``api/v1/gitrepository_types.go``); revisions
    ``refs/heads/main@sha1:``, ``sha1:`` for a commit only, ``<branch>@sha1:`` for
    branch+commit (fluxcd/pkg ``git/gogit/clone_test.go``). The commit is pinned even though
    the branch has moved on.
    """
    first = env.head()
    env.work.git.run("tag", "-a", "v1.0.0", "-m", "release", cwd=env.work.path)
    env.work.git.run("push", "--quiet", "origin", "v1.0.0", cwd=env.work.path)
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.create_source(ref={k: v.format(first=first) for k, v in ref.items()})
    records = env.flux.reconcile_due()
    assert actions(records) == [(FETCHED, expected.format(first=first, second=second))]


def test_long_interval_means_no_fetch_until_asked(env: FluxEnv, clock: FakeClock) -> None:
    """Before the interval a pushed commit is not fetched; a new requestedAt fetches the head.

    Facts: ../shared/facts/appliers.md F2 "How often it fetches" (requeue at
    ``spec.interval``; a new requestedAt token fetches whatever the ref's HEAD is at that
    moment) and F1 (the token is copied into ``status.lastHandledReconcileAt``).
    """
    env.create_source(interval="60m")
    first = f"main@sha1:{env.head()}"
    assert actions(env.flux.reconcile_due()) == [(FETCHED, first)]
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    clock.advance(59 * 60)
    assert env.flux.reconcile_due() == []
    assert env.get(SOURCE)["status"]["artifact"]["revision"] == first
    env.request(SOURCE, "2024-01-29T17:22:23.186705496Z")
    assert actions(env.flux.reconcile_due()) == [(FETCHED, f"main@sha1:{second}")]
    status = env.get(SOURCE)["status"]
    assert status["lastHandledReconcileAt"] == "2024-01-29T17:22:23.186705496Z"
    assert status["artifact"]["revision"] == f"main@sha1:{second}"


def test_interval_elapsed_fetches_again(env: FluxEnv, clock: FakeClock) -> None:
    """Once ``spec.interval`` has passed since the last reconcile, the head is fetched.

    Fact: ../shared/facts/appliers.md F2: after each reconcile the GitRepository requeues at
    ``spec.interval`` (``gitrepository_controller.go``; the double has no jitter).
    """
    env.create_source(interval="10m")
    env.flux.reconcile_due()
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    clock.advance(10 * 60)
    assert actions(env.flux.reconcile_due()) == [(FETCHED, f"main@sha1:{second}")]
    clock.advance(5 * 60)
    assert env.flux.reconcile_due() == []
    clock.advance(5 * 60)
    assert actions(env.flux.reconcile_due()) == [(UP_TO_DATE, f"main@sha1:{second}")]


def test_same_head_is_not_fetched_again(env: FluxEnv) -> None:
    """A request with no new commit checks the remote but keeps the stored artifact.

    Fact: ../shared/facts/appliers.md F2: if the remote HEAD equals the last observed commit
    the clone is skipped (``reconcileSource``, ``LastObservedCommit``); the token is still
    recorded (F1).
    """
    env.create_source()
    env.flux.reconcile_due()
    before = env.get(SOURCE)["status"]["artifact"]
    env.request(SOURCE, "again")
    assert actions(env.flux.reconcile_due()) == [(UP_TO_DATE, before["revision"])]
    status = env.get(SOURCE)["status"]
    assert status["artifact"] == before
    assert status["lastHandledReconcileAt"] == "again"


def test_metadata_and_status_edits_wake_nothing(env: FluxEnv) -> None:
    """Labels, other annotations, status writes and an unchanged token do not reconcile.

    Fact: ../shared/facts/appliers.md F1: the watch passes an update only on a new generation
    or a new requestedAt value (``GenerationChangedPredicate`` OR
    ``ReconcileRequestedPredicate``, fluxcd/pkg ``runtime/predicates/reconcile_requested.go``).
    """
    env.create_source()
    env.request(SOURCE, "t1")
    env.flux.reconcile_due()
    env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.patch(SOURCE, {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}}})
    env.custom.patch_namespaced_custom_object_status(
        *SOURCE[:2], NAMESPACE, SOURCE[2], "app", {"status": {"observedGeneration": 0}}
    )
    env.request(SOURCE, "t1")
    assert env.flux.reconcile_due() == []


def test_spec_change_reconciles_without_a_token(env: FluxEnv) -> None:
    """Pointing the ref at another branch fetches it at once, with no annotation.

    Fact: ../shared/facts/appliers.md F1/F2: a spec change is a new generation, which wakes
    the GitRepository ("a spec change needs no annotation").
    """
    env.create_source()
    env.flux.reconcile_due()
    env.work.git.run("checkout", "--quiet", "-b", "other", cwd=env.work.path)
    other = env.work.push({"deploy/app.yaml": config_map("app", {"color": "red"})})
    env.work.git.run("push", "--quiet", "origin", "HEAD:other", cwd=env.work.path)
    env.patch(SOURCE, {"spec": {"ref": {"branch": "other"}}})
    assert actions(env.flux.reconcile_due()) == [(FETCHED, f"other@sha1:{other}")]
    obj = env.get(SOURCE)
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"] == 2
    assert REQUESTED_AT not in (obj["metadata"].get("annotations") or {})


def test_suspended_source_fetches_nothing_but_records_the_token(
    env: FluxEnv, clock: FakeClock
) -> None:
    """While suspended: no fetch on a token or an interval; the token is still handled.

    Facts: ../shared/facts/appliers.md F2 §Suspend ("changes ... will not result in a new
    Artifact"); F1 (the token is recorded through ``summarize.RecordReconcileReq``), which
    source-controller ``internal/controller/gitrepository_controller.go`` ``Reconcile`` runs
    in its deferred patch also when it returns early for ``spec.suspend``.
    """
    env.create_source(interval="10m")
    env.flux.reconcile_due()
    first = env.get(SOURCE)["status"]["artifact"]["revision"]
    env.patch(SOURCE, {"spec": {"suspend": True}})
    assert [r.action for r in env.flux.reconcile_due()] == [SUSPENDED]
    env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.request(SOURCE, "while-suspended")
    assert [r.action for r in env.flux.reconcile_due()] == [SUSPENDED]
    clock.advance(3600)
    assert env.flux.reconcile_due() == []
    status = env.get(SOURCE)["status"]
    assert status["artifact"]["revision"] == first
    assert status["lastHandledReconcileAt"] == "while-suspended"
    env.patch(SOURCE, {"spec": {"suspend": False}})
    assert [r.action for r in env.flux.reconcile_due()] == [FETCHED]


def test_missing_branch_is_fetch_failed_and_retried(env: FluxEnv, clock: FakeClock) -> None:
    """A ref that does not exist: FetchFailed and Ready False ``GitOperationFailed``, retried.

    Fact: ../shared/facts/appliers.md F2 §Conditions (failures: ``FetchFailed`` True with
    reason ``GitOperationFailed``; failures retry with backoff) and the ls-remote exact match
    on ``refs/heads/<branch>``.
    """
    env.create_source(ref={"branch": "nope"})
    assert [r.action for r in env.flux.reconcile_due()] == [FAILED]
    obj = env.get(SOURCE)
    for kind, status in (("FetchFailed", "True"), ("Ready", "False")):
        found = condition(obj, kind)
        assert (found["status"], found["reason"]) == (status, "GitOperationFailed")
        assert 'couldn\'t find remote ref "refs/heads/nope"' in found["message"]
    assert "artifact" not in obj["status"]
    clock.advance(1)
    assert [r.action for r in env.flux.reconcile_due()] == [FAILED]
    env.patch(SOURCE, {"spec": {"ref": {"branch": "main"}}})
    assert [r.action for r in env.flux.reconcile_due()] == [FETCHED]
    assert "FetchFailed" not in [c["type"] for c in env.get(SOURCE)["status"]["conditions"]]


def test_namespace_scoped_controllers_see_only_their_namespace(
    env: FluxEnv, clock: FakeClock, tmp_path: Path
) -> None:
    """``namespace=`` limits the doubles to one namespace (lists and watches are namespaced),
    as a controller started with ``--watch-namespace`` does; a deleted object is forgotten."""
    scoped = FluxControllers(
        env.kube.api_client(), tmp_path / "scoped", clock=clock, namespace="kube-public"
    )
    env.create_source()
    assert scoped.reconcile_due() == []
    body = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "app", "namespace": "kube-public"},
        "spec": {"url": env.url, "interval": "60m", "ref": {"branch": "main"}},
    }
    env.custom.create_namespaced_custom_object(*SOURCE[:2], "kube-public", SOURCE[2], body)
    records = scoped.reconcile_due()
    assert [(r.namespace, r.action) for r in records] == [("kube-public", FETCHED)]
    env.custom.delete_namespaced_custom_object(*SOURCE[:2], "kube-public", SOURCE[2], "app")
    clock.advance(3 * 3600)
    assert scoped.reconcile_due() == []
