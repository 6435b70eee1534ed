"""docs/argocd.md's complete example is held to the code and to the real Argo CD CRD (O5).

The example is read from the guide itself. Every custom object must decode against its CRD's
schema (the real Application CRD from ../shared/crds, ours from the chart) with no unknown
field and no error, and follow the guide's own advice; applied to the sandbox (with the
repository URL pointed at the sandbox Git host), the watcher must report
ApplierConfigured=True, and one request, through the Argo CD double, must be Delivered with the
pinned commit synced (facts: appliers.md A2 "How the controller consumes and clears it").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client

from sandbox import manifests as m
from sandbox.argocd import ArgoCDController
from sandbox.githost import GitHost
from sandbox.kube.schema import check
from sandbox.kube.server import KubeApiServer
from sandbox.paths import REPO_ROOT, all_crd_files
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import ports
from shared.model.config import ApplierRef
from tests.fixtures import (
    dispatcher_context,
    foreign_commit_request,
    gittarget,
    owned_at_tip,
    watcher_burst,
)
from tests.integration.docs.test_flux_guide import EXAMPLE_URL, _schemas

pytestmark = pytest.mark.integration

GUIDE = REPO_ROOT / "docs" / "argocd.md"
START, END = "# --- example: argocd-guide ---", "# --- end example ---"
APPS = ("argoproj.io", "v1alpha1", "argocd", "applications")
CM = (
    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-b\ndata:\n  k: v\n"
)


def example() -> list[dict[str, Any]]:
    """The guide's example objects, as the reader copies them."""
    text = GUIDE.read_text()
    body = text[text.index(START) + len(START) : text.index(END)]
    return [doc for doc in yaml.safe_load_all(body) if doc]


def test_every_custom_object_of_the_example_decodes_with_no_unknown_field() -> None:
    schemas = _schemas()
    objects = [o for o in example() if "/" in o["apiVersion"]]
    kinds = {o["kind"] for o in objects}
    assert {"Application", "GitTarget", "GitProvider", "WatchRule", "ClusterProvider"} <= kinds
    for obj in objects:
        checked = check(schemas[(obj["apiVersion"], obj["kind"])], obj)
        assert checked.unknown_fields == [], f"{obj['kind']}: {checked.unknown_fields}"
        assert checked.errors == [], f"{obj['kind']}: {checked.errors}"


def test_the_example_follows_the_guides_own_advice() -> None:
    by_kind = {o["kind"]: o for o in example()}
    app, target, provider = by_kind["Application"], by_kind["GitTarget"], by_kind["GitProvider"]
    source, policy = app["spec"]["source"], app["spec"]["syncPolicy"]
    assert "sources" not in app["spec"] and "sourceHydrator" not in app["spec"]
    assert policy["automated"]["enabled"] is False, "automated sync must be off"
    assert policy["automated"]["prune"] is True, "the block is kept for its prune"
    assert "refresh" not in policy.get("retry", {})
    assert source["repoURL"] == provider["spec"]["url"]
    assert source["targetRevision"] == target["spec"]["branch"]
    assert source["path"] == target["spec"]["path"]
    assert source["directory"]["recurse"] is True, "objects sit in subfolders of the folder"
    ref = target["spec"]["applier"]["applicationRef"]
    assert (ref["name"], ref["namespace"]) == (
        app["metadata"]["name"],
        app["metadata"]["namespace"],
    )
    assert "quietPeriod" not in target["spec"]["applier"]


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[KubeApiServer, str, ArgoCDController]]:
    kube = KubeApiServer(all_crd_files(), bookmark_interval=0.2)
    kube.start()
    host = GitHost(tmp_path / "git")
    host.start()
    url = host.create_repo(
        "platform/clusters", files={"clusters/prod/team-b/team-b/configmaps/app.yaml": CM}
    )
    argo = ArgoCDController(kube.api_client(), tmp_path / "argocd")
    argo.start()
    yield kube, url, argo
    argo.stopping()
    host.stop()
    kube.stop()
    argo.stop()


def _apply(kube: KubeApiServer, url: str) -> None:
    for obj in example():
        spec = obj.get("spec", {})
        if spec.get("url") == EXAMPLE_URL:
            spec["url"] = url
        if spec.get("source", {}).get("repoURL") == EXAMPLE_URL:
            spec["source"]["repoURL"] = url
        m.create(kube.api_client(), obj)


def test_the_example_is_configured_and_a_request_is_synced_pinned(
    sandbox: tuple[KubeApiServer, str, ArgoCDController],
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    kube, url, _ = sandbox
    _apply(kube, url)
    watcher_burst(kube, tmp_path, key_prefix)
    target = gittarget(kube, "team-b", "apps")
    custom = client.CustomObjectsApi(kube.api_client())
    conditions = {c["type"]: c for c in target["status"]["conditions"]}
    assert conditions["ApplierConfigured"]["status"] == "True", conditions["ApplierConfigured"]

    ctx = dispatcher_context(redis_client, key_prefix, kube.api_client())
    bk, tip = owned_at_tip(ctx, redis_client, url, "team-b", "platform", owner="guide-test")
    request = foreign_commit_request(
        bk,
        url,
        tip,
        target["metadata"]["uid"],
        ApplierRef("Application", "argocd", "team-b-apps", "default"),
    )
    outcome = attempts.run(request, dataclasses.replace(ports(ctx), handled_timeout_s=30))
    assert outcome.outcome == "Delivered", outcome.message
    app: dict[str, Any] = custom.get_namespaced_custom_object(*APPS, "team-b-apps")  # type: ignore[assignment]
    state = app["status"]["operationState"]
    assert state["phase"] == "Succeeded", state
    assert state["operation"]["sync"]["revision"] == tip == state["syncResult"]["revision"]
    assert state["operation"]["initiatedBy"] == {"username": "gitops-reverser", "automated": True}
    info = {i["name"]: i["value"] for i in state["operation"]["info"]}
    assert info["gitops-reverser/token"] == request.token
    made = client.CoreV1Api(kube.api_client()).read_namespaced_config_map("app", "team-b")
    assert made.data == {"k": "v"}
