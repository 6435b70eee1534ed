"""docs/flux.md's complete example is held to the code and to the real Flux CRDs (O5).

The example is read from the guide itself. Every object must decode against its CRD's schema
(the real Flux CRDs from ../shared/crds, ours from the chart) with no unknown field and no
error; applied to the sandbox (with the repository URL pointed at the sandbox Git host), the
watcher must report ApplierConfigured=True, and a request must stamp the GitRepository.
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
from sandbox.flux import FluxControllers
from sandbox.flux.pacing import Pacing
from sandbox.githost import GitHost
from sandbox.kube.schema import check
from sandbox.kube.server import KubeApiServer
from sandbox.paths import REPO_ROOT, all_crd_files
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import ports
from shared.model.config import ApplierRef
from shared.model.ids import Branch
from tests.fixtures import (
    dispatcher_context,
    foreign_commit_request,
    gittarget,
    owned_at_tip,
    watcher_burst,
)

pytestmark = pytest.mark.integration

GUIDE = REPO_ROOT / "docs" / "flux.md"
START, END = "# --- example: flux-guide ---", "# --- end example ---"
EXAMPLE_URL = "https://git.example.com/platform/clusters.git"


def example() -> list[dict[str, Any]]:
    """The guide's example objects, as the reader copies them."""
    text = GUIDE.read_text()
    body = text[text.index(START) + len(START) : text.index(END)]
    return [doc for doc in yaml.safe_load_all(body) if doc]


def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in all_crd_files():
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            for version in crd["spec"]["versions"]:
                api_version = f"{crd['spec']['group']}/{version['name']}"
                found[(api_version, crd["spec"]["names"]["kind"])] = version["schema"][
                    "openAPIV3Schema"
                ]
    return found


def test_every_custom_object_of_the_example_decodes_with_no_unknown_field() -> None:
    schemas = _schemas()
    objects = [o for o in example() if "/" in o["apiVersion"]]
    kinds = {o["kind"] for o in objects}
    assert {"GitRepository", "Kustomization", "GitTarget", "GitProvider"} <= kinds
    for obj in objects:
        checked = check(schemas[(obj["apiVersion"], obj["kind"])], obj)
        assert checked.unknown_fields == [], f"{obj['kind']}: {checked.unknown_fields}"
        assert checked.errors == [], f"{obj['kind']}: {checked.errors}"


def test_the_example_follows_the_guides_own_advice() -> None:
    by_kind = {o["kind"]: o for o in example()}
    repo, ks = by_kind["GitRepository"], by_kind["Kustomization"]
    target, provider = by_kind["GitTarget"], by_kind["GitProvider"]
    assert repo["spec"]["interval"] == "24h", "the GitRepository must not fetch on its own"
    assert repo["spec"]["url"] == provider["spec"]["url"]
    assert repo["spec"]["ref"]["branch"] == target["spec"]["branch"]
    assert ks["spec"]["path"].lstrip("./") == target["spec"]["path"]
    assert target["spec"]["applier"]["kustomizationRef"]["name"] == ks["metadata"]["name"]


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[KubeApiServer, GitHost, str]]:
    kube = KubeApiServer(all_crd_files(), bookmark_interval=0.2)
    kube.start()
    host = GitHost(tmp_path / "git")
    host.start()
    cm = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\n"
    url = host.create_repo(
        "platform/clusters", files={"clusters/prod/team-a/team-a/configmaps/app.yaml": cm}
    )
    yield kube, host, url
    host.stop()
    kube.stop()


def _apply(kube: KubeApiServer, url: str) -> None:
    for obj in example():
        if obj.get("spec", {}).get("url") == EXAMPLE_URL:
            obj["spec"]["url"] = url
        m.create(kube.api_client(), obj)


def test_the_example_is_configured_and_a_request_stamps_the_source(
    sandbox: tuple[KubeApiServer, GitHost, str],
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    kube, _, url = sandbox
    _apply(kube, url)
    watcher_burst(kube, tmp_path, key_prefix)
    target = gittarget(kube, "team-a", "apps")
    custom = client.CustomObjectsApi(kube.api_client())
    conditions = {c["type"]: c for c in target["status"]["conditions"]}
    assert conditions["ApplierConfigured"]["status"] == "True", conditions["ApplierConfigured"]

    flux = FluxControllers(kube.api_client(), tmp_path / "flux", pacing=Pacing())
    flux.start()
    try:
        ctx = dispatcher_context(redis_client, key_prefix, kube.api_client())
        bk, tip = owned_at_tip(ctx, redis_client, url, "team-a", "platform", owner="guide-test")
        request = foreign_commit_request(
            bk,
            url,
            tip,
            target["metadata"]["uid"],
            ApplierRef("Kustomization", "team-a", "team-a-apps", "default"),
        )
        outcome = attempts.run(request, dataclasses.replace(ports(ctx), handled_timeout_s=30))
        repo: dict[str, Any] = custom.get_namespaced_custom_object(  # type: ignore[assignment]
            "source.toolkit.fluxcd.io", "v1", "team-a", "gitrepositories", "clusters"
        )
        assert repo["metadata"]["annotations"]["reconcile.fluxcd.io/requestedAt"] == request.token
        assert outcome.outcome == "Delivered", outcome.message
        assert Branch(url, "main").key == bk
    finally:
        flux.stop()
