"""Package the chart for users who do not install from a checkout (``make chart``).

Writes, into ``dist/`` (or ``--out``):

- ``gitops-reverser-<version>.tgz``: the Helm package, made by Helm's own packager
  (``helm-python-sdk`` embeds Helm; the layout and the Chart.yaml inside are Helm's), then
  written again reproducibly: the same members in the same order (``gitops-reverser/Chart.yaml``
  first), owner 0, mode 0644, every time ``SOURCE_DATE_EPOCH`` (0 when unset), and a gzip
  header without a name or a time. Two builds of the same tree are byte-identical.
- ``install.yaml``: for ``kubectl apply --server-side -f`` and kustomize users: the release's
  Namespace, the CRDs, and the chart rendered with its default values as release
  ``gitops-reverser`` in namespace ``gitops-reverser``, in the order Helm installs kinds.

    .venv/bin/python scripts/package_chart.py [--out dist]
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "gitops-reverser"
RELEASE = NAMESPACE = "gitops-reverser"
#: Helm's install order of the kinds this chart renders (helm/pkg/release/util/kind_sorter.go);
#: anything else after them.
KIND_ORDER = (
    "Namespace",
    "NetworkPolicy",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Deployment",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Ingress",
    "PodDisruptionBudget",
)


def version() -> str:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return str(chart["version"])


def _epoch() -> int:
    return int(os.environ.get("SOURCE_DATE_EPOCH", "0"))


def normalised(archive: bytes) -> bytes:
    """The tar.gz again with nothing that depends on when or by whom it was made."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as source,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.USTAR_FORMAT) as target,
    ):
        members = source.getmembers()
        assert members and members[0].name.endswith("/Chart.yaml"), members[:1]
        for member in members:
            assert member.isfile(), member.name
            data = source.extractfile(member)
            assert data is not None
            info = tarfile.TarInfo(member.name)
            info.size, info.mode, info.mtime = member.size, 0o644, _epoch()
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            target.addfile(info, data)
    return out.getvalue()


def package(out: Path) -> Path:
    """dist/gitops-reverser-<version>.tgz, made by Helm and normalised."""
    with tempfile.TemporaryDirectory() as scratch:
        made = Path(helm.package(str(CHART), destination=scratch))
        path = out / made.name
        path.write_bytes(normalised(made.read_bytes()))
    return path


def _rank(obj: dict[str, Any]) -> int:
    kind = obj.get("kind", "")
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def manifests() -> str:
    """The Namespace, the CRDs and the default render, one YAML stream."""
    with helm.Chart.load(str(CHART)) as chart:
        files: dict[str, str] = chart.render({}, name=RELEASE, namespace=NAMESPACE)
    rendered = [
        doc
        for path in sorted(files)
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(files[path])
        if doc
    ]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    crds = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    ordered = sorted([namespace, *crds, *rendered], key=_rank)  # stable within a kind
    header = (
        f"# gitops-reverser {version()}: the CRDs and the chart rendered with its default values\n"
        f"# (release {RELEASE}, namespace {NAMESPACE}). Written by `make chart`\n"
        "# (scripts/package_chart.py); apply with `kubectl apply --server-side -f install.yaml`.\n"
    )
    body = "---\n".join(yaml.safe_dump(o, sort_keys=False, width=100) for o in ordered)
    return header + "---\n" + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    archive = package(args.out)
    install = args.out / "install.yaml"
    install.write_text(manifests())
    print(f"{archive.relative_to(args.out.parent)}\n{install.relative_to(args.out.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
