"""The kustomize-controller double builds the kustomize subset (P2).

Facts: ../shared/facts/appliers.md F3 (the controller runs kustomize build on ``spec.path``),
../shared/facts/upstream-gitops-reverser.md 3.4 (the subset), and kustomize's documented
behaviour for each field as docs/kustomize.md §Rendering cites it (images reference example,
replicas reference, namespace, commonLabels on selectors and templates, strategic-merge patch
of a named list).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.flux.kustomize_build import build
from sandbox.flux.manifests import BuildFailed

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: the-deployment
spec:
  replicas: 1
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
      - name: mypostgresdb
        image: postgres:8
      - name: nginxapp
        image: nginx:1.7.9
      - name: myapp
        image: my-demo-app:latest
      - name: alpine-app
        image: alpine:3.7
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_images_follow_the_documented_example(tmp_path: Path) -> None:
    """kustomize's images reference: newName+newTag, newTag, newName, digest."""
    root = _write(
        tmp_path,
        {
            "app/deployment.yaml": DEPLOY,
            "app/kustomization.yaml": (
                "resources: [deployment.yaml]\nimages:\n"
                "- {name: postgres, newName: my-registry/my-postgres, newTag: v1}\n"
                "- {name: nginx, newTag: 1.8.0}\n- {name: my-demo-app, newName: my-app}\n"
                "- {name: alpine, digest: 'sha256:24a0'}\n"
            ),
        },
    )
    (obj,) = build(root / "app", root)
    images = [c["image"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert images == [
        "my-registry/my-postgres:v1",
        "nginx:1.8.0",
        "my-app:latest",
        "alpine@sha256:24a0",
    ]


def test_overlay_namespace_replicas_labels_and_patch(tmp_path: Path) -> None:
    """An overlay renders its base first; namespace on the object; replicas by name;
    commonLabels on metadata, selector and template; a path patch merges containers by
    name."""
    root = _write(
        tmp_path,
        {
            "base/deployment.yaml": DEPLOY,
            "base/kustomization.yaml": "resources: [deployment.yaml]\n",
            "prod/kustomization.yaml": (
                "resources: [../base]\nnamespace: prod\ncommonLabels: {team: a}\n"
                "replicas: [{name: the-deployment, count: 4}]\npatches: [{path: env.yaml}]\n"
            ),
            "prod/env.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: the-deployment}\n"
                "spec: {template: {spec: {containers:\n"
                "  [{name: myapp, env: [{name: A, value: b}]}]}}}\n"
            ),
        },
    )
    (obj,) = build(root / "prod", root)
    assert obj["metadata"]["namespace"] == "prod"
    assert obj["metadata"]["labels"] == {"team": "a"}
    assert obj["spec"]["selector"]["matchLabels"] == {"app": "x", "team": "a"}
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "x", "team": "a"}
    assert obj["spec"]["replicas"] == 4
    myapp = obj["spec"]["template"]["spec"]["containers"][2]
    assert myapp == {
        "name": "myapp",
        "image": "my-demo-app:latest",
        "env": [{"name": "A", "value": "b"}],
    }


@pytest.mark.parametrize("extra", ["namePrefix: x-\n", "configMapGenerator: []\n"])
def test_a_field_beyond_the_subset_fails_the_build(tmp_path: Path, extra: str) -> None:
    """The double never applies a kustomization it would render differently."""
    root = _write(
        tmp_path,
        {
            "app/deployment.yaml": DEPLOY,
            "app/kustomization.yaml": "resources: [deployment.yaml]\n" + extra,
        },
    )
    with pytest.raises(BuildFailed, match="is not supported by the sandbox double"):
        build(root / "app", root)
