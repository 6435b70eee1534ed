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
import os
import subprocess
import sys
import time
import uuid
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
from sandbox.githost.outside import git
from sandbox.kube.schema import check
from sandbox.kube.server import KubeApiServer
from sandbox.paths import REPO_ROOT, all_crd_files
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import Context, ports
from shared.kube.clients import ClientFactory
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from shared.store.keys import Keys
from shared.store.leases import Leases
from tests.configs import branch_config
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
    kube.write_kubeconfig(tmp_path / "kubeconfig")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    env.update(
        {
            "GITOPS_REVERSER_REDIS_URL": Settings.from_env().redis_url,
            "GITOPS_REVERSER_KEY_PREFIX": key_prefix,
            "GITOPS_REVERSER_KUBECONFIG": str(tmp_path / "kubeconfig"),
        }
    )
    subprocess.run(
        [sys.executable, "-m", "services.watcher", "--burst"],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    custom = client.CustomObjectsApi(kube.api_client())
    target: dict[str, Any] = custom.get_namespaced_custom_object(  # type: ignore[assignment]
        "gitopsreverser.io", "v1alpha1", "team-b", "gittargets", "apps"
    )
    conditions = {c["type"]: c for c in target["status"]["conditions"]}
    assert conditions["ApplierConfigured"]["status"] == "True", conditions["ApplierConfigured"]

    settings = Settings(
        redis_url=Settings.from_env().redis_url,
        key_prefix=key_prefix,
        apply_queue=f"{key_prefix}-q",
    )
    ctx = Context.build(
        settings, redis_client, ClientFactory(settings, time.time, local=kube.api_client())
    )
    bk = ctx.configs.publish_branch(branch_config(url, "main", "team-b", "platform"))
    tip = git("ls-remote", url, "refs/heads/main").split()[0]
    lease = Leases(redis_client, Keys(key_prefix), 60_000).acquire(bk, "guide-test")
    assert lease is not None
    ctx.states.publish_tip(lease, tip)
    request = ApplyRequest(
        uuid.uuid4().hex,
        bk,
        url,
        "main",
        tip,
        {"ForeignCommit": [target["metadata"]["uid"]]},
        ApplierRef("Application", "argocd", "team-b-apps", "default"),
        time.time(),
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
