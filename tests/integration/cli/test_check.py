"""``check [--pre]``: the CRDs and their versions, Flux's and Argo CD's CRDs, the product's grants
asked as the kubeconfig's identity (SelfSubjectAccessReviews, which the API double answers
from its access rules), and Redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from services.cli.check import OWN_CRDS, PRODUCT_GRANTS
from services.cli.errors import EXIT_CHECK_FAILED, EXIT_OK
from shared.settings import Settings
from tests.integration.chart.render import Rendered, render
from tests.integration.cli.harness import Cli, crd_files

PRODUCT = "system:serviceaccount:gitops-reverser:gr-gitops-reverser-watcher"


def test_check_pre_passes_on_a_cluster_that_allows_everything(cli: Cli) -> None:
    done = cli("check", "--pre")
    assert done.code == EXIT_OK, done.out
    lines = done.out.splitlines()
    for name in OWN_CRDS:
        assert f"✔ CRD {name}: serves v1alpha1 (storage)" in lines
    assert "✔ Flux CRDs: installed" in lines and "✔ Argo CD CRDs: installed" in lines
    assert "✔ grant of the watcher: patch gittargets/status.gitopsreverser.io: allowed" in lines
    assert any(line.startswith("✔ Redis: answers at 127.0.0.1:") for line in lines), lines
    assert lines[-1] == "all checks passed"


def test_check_names_each_grant_the_identity_lacks(tmp_path: Path, key_prefix: str) -> None:
    # The product's identity may only read GitTargets and Secrets.
    rules = [
        AccessRule("admin", ("*",), ("*",), ("*",)),
        AccessRule(PRODUCT, ("list",), ("gitopsreverser.io",), ("gittargets",)),
        AccessRule(PRODUCT, ("get",), ("",), ("secrets",)),
        AccessRule(PRODUCT, ("get",), ("apiextensions.k8s.io",), ("customresourcedefinitions",)),
    ]
    files = crd_files(tmp_path / "crds", suspend=True, handled=True)
    server = KubeApiServer(files, tokens={"a": "admin", "p": PRODUCT}, rules=rules)
    server.start()
    try:
        server.write_kubeconfig(tmp_path / "kubeconfig", token="p")
        url = Settings.from_env().redis_url
        cli = Cli(tmp_path / "kubeconfig", ("--redis-url", url, "--key-prefix", key_prefix))
        done = cli("check", "-o", "json")
    finally:
        server.stop()
    assert done.code == EXIT_CHECK_FAILED
    results = {r["check"]: r for r in done.json()["items"]}
    assert results["grant of the watcher: list gittargets.gitopsreverser.io"]["ok"] is True
    assert results["grant of the branch-worker: get secrets"]["ok"] is True
    lacking = results["grant of the watcher: patch gittargets/status.gitopsreverser.io"]
    assert lacking == {
        "check": "grant of the watcher: patch gittargets/status.gitopsreverser.io",
        "ok": False,
        "detail": "not allowed to this kubeconfig's identity",
    }
    assert results["Redis"]["ok"] is True


def test_without_an_install_only_pre_lets_redis_pass(cli: Cli) -> None:
    pre = cli("check", "--pre", "-o", "json", redis=False)
    assert pre.code == EXIT_OK
    redis_check = next(r for r in pre.json()["items"] if r["check"] == "Redis")
    assert redis_check["ok"] and "no gitops-reverser install" in redis_check["detail"]
    installed = cli("check", "-o", "json", redis=False)
    assert installed.code == EXIT_CHECK_FAILED
    assert not next(r for r in installed.json()["items"] if r["check"] == "Redis")["ok"]


@pytest.fixture(scope="module")
def chart() -> Rendered:
    return render()


@pytest.mark.parametrize("grant", PRODUCT_GRANTS, ids=lambda g: f"{g[0]}:{g[1]}:{g[3]}")
def test_every_grant_checked_is_one_the_chart_gives(
    chart: Rendered, grant: tuple[str, str, str, str]
) -> None:
    component, verb, group, resource = grant
    role = chart.one("ClusterRole", f"gr-gitops-reverser-{component}")
    assert any(
        group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        for rule in role["rules"]
    ), f"the chart's {component} ClusterRole has no {verb} {resource}"
