"""``make chart`` (issue 24 §3): the Helm package and install.yaml, reproducible, loadable by
Helm, and the same chart the tests render from the checkout."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from sandbox.paths import REPO_ROOT
from tests.integration.chart.render import CHART, render_files

NAMESPACE = "gitops-reverser"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "package_chart", REPO_ROOT / "scripts" / "package_chart.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two builds, each by the command ``make chart`` runs."""
    outs = []
    for name in ("one", "two"):
        out = tmp_path_factory.mktemp(name)
        subprocess.run(
            [sys.executable, "scripts/package_chart.py", "--out", str(out)],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        outs.append(out)
    return outs[0], outs[1]


def key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def test_two_builds_are_byte_identical(built: tuple[Path, Path]) -> None:
    version = _script().version()
    names = {f"gitops-reverser-{version}.tgz", "install.yaml"}
    one, two = built
    assert {p.name for p in one.iterdir()} == names == {p.name for p in two.iterdir()}
    for name in names:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_the_package_is_the_chart_helm_loads(built: tuple[Path, Path]) -> None:
    """Chart.yaml first under the chart's folder, nothing outside it; Helm renders from the
    archive exactly what it renders from the checkout."""
    (archive,) = built[0].glob("*.tgz")
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
    assert members[0].name == "gitops-reverser/Chart.yaml"
    assert all(m.name.startswith("gitops-reverser/") and m.isfile() for m in members)
    names = {m.name.removeprefix("gitops-reverser/") for m in members}
    assert {"values.yaml", "values.schema.json", "templates/redis.yaml"} <= names
    assert len([n for n in names if n.startswith("crds/")]) == 6
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    with helm.Chart.load(str(archive)) as chart:
        files = chart.render({}, name="gr", namespace=NAMESPACE)
    assert files == render_files()
    assert helm.lint(str(archive))["errors"] == []


def test_install_yaml_is_the_crds_and_the_default_render(built: tuple[Path, Path]) -> None:
    """kubectl apply -f install.yaml: the Namespace first, the six CRDs before anything uses
    them, every rendered object (none a Secret), each valid for Kubernetes 1.29."""
    docs = [d for d in yaml.safe_load_all((built[0] / "install.yaml").read_text()) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace" and docs[0]["metadata"]["name"] == NAMESPACE
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    on_disk = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    assert crds == on_disk and len(crds) == 6
    assert kinds.index("Deployment") > kinds.index("CustomResourceDefinition")
    rendered = [
        d
        for path, text in sorted(render_files(release=NAMESPACE).items())
        if not path.endswith("NOTES.txt")
        for d in yaml.safe_load_all(text)
        if d
    ]
    assert sorted(map(key, docs[1:]), key=str) == sorted(
        [*map(key, crds), *map(key, rendered)], key=str
    )
    assert "Secret" not in kinds
    cluster_wide = ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding")
    for doc in docs:
        if doc["kind"] not in cluster_wide:
            assert doc["metadata"]["namespace"] == NAMESPACE, key(doc)
        kubernetes_validate.validate(doc, "1.29.0", strict=True)
