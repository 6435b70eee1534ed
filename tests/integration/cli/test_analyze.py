"""``analyze DIR``: what the writer would do with a folder, with no cluster: the branch worker's
own folder reading, run on a copy (the folder itself is never written to)."""

from __future__ import annotations

import os
from pathlib import Path

from services.cli.errors import EXIT_CHECK_FAILED, EXIT_NOT_FOUND, EXIT_OK
from tests.integration.cli.harness import Cli

CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: team
data:
  a: "1"
"""
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team
spec:
  template: {}
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "no-kubeconfig")  # analyze reads no cluster


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_folder_the_writer_adopts(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "apps",
        {
            "app.yaml": CM.format(name="one") + "---\n" + DEPLOY,
            "team/configmaps/two.yaml": CM.format(name="two"),
            "README.md": "# apps\n",
            ".gittargetignore": "drafts/\n",
            "drafts/wip.txt": "not yet\n",
        },
    )
    before = _snapshot(folder)
    done = _cli(tmp_path)("analyze", str(folder), "-o", "json")
    assert done.code == EXIT_OK, done
    record = done.json()
    assert record["accepted"] and record["refusal"] is None and not record["kustomize"]
    assert [(o["kind"], o["name"], o["file"]) for o in record["objects"]] == [
        ("ConfigMap", "one", "app.yaml"),
        ("ConfigMap", "two", "team/configmaps/two.yaml"),
        ("Deployment", "web", "app.yaml"),
    ]
    assert record["ignoredFiles"] == ["drafts/wip.txt"] and record["refusedFiles"] == []
    assert _snapshot(folder) == before
    text = _cli(tmp_path)("analyze", str(folder)).out
    assert "the writer would adopt this folder" in text
    assert "  Deployment team/web in app.yaml" in text


def test_a_folder_the_writer_refuses_names_every_file_and_why(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "apps",
        {
            "ok.yaml": CM.format(name="ok"),
            "run.sh": "#!/bin/sh\n",
            "broken.yaml": "a: [unclosed\n",
        },
    )
    os.symlink("ok.yaml", folder / "link.yaml")
    done = _cli(tmp_path)("analyze", str(folder), "-o", "json")
    assert done.code == EXIT_CHECK_FAILED
    record = done.json()
    assert not record["accepted"]
    assert record["refusal"]["file"] == "broken.yaml"
    assert record["refusal"]["reason"] == "UnparsableManifest"
    assert record["refusedFiles"] == [
        {"file": "broken.yaml", "reason": "UnparsableManifest"},
        {"file": "link.yaml", "reason": "SymbolicLink"},
        {"file": "run.sh", "reason": "UnsupportedContent"},
    ]
    text = _cli(tmp_path)("analyze", str(folder)).out
    assert "the writer would REFUSE it (UnparsableManifest at broken.yaml)" in text


def test_a_kustomization_is_read_through_the_kustomize_subset(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "apps",
        {
            "kustomization.yaml": "resources:\n  - base/cm.yaml\n",
            "base/cm.yaml": CM.format(name="base"),
        },
    )
    done = _cli(tmp_path)("analyze", str(folder), "-o", "json")
    assert done.code == EXIT_OK, done
    record = done.json()
    assert record["kustomize"] is True
    assert [(o["kind"], o["name"], o["file"]) for o in record["objects"]] == [
        ("ConfigMap", "base", "(kustomize render)")
    ]
    # a field outside the subset refuses the folder, naming the field
    (folder / "kustomization.yaml").write_text("resources:\n  - base/cm.yaml\nnamePrefix: p-\n")
    refused = _cli(tmp_path)("analyze", str(folder), "-o", "json")
    assert refused.code == EXIT_CHECK_FAILED
    assert refused.json()["refusal"]["reason"] == "UnsupportedContent"
    assert "'namePrefix' is not supported" in refused.json()["refusal"]["detail"]


def test_a_missing_folder_is_not_found(tmp_path: Path) -> None:
    done = _cli(tmp_path)("analyze", str(tmp_path / "nope"))
    assert done.code == EXIT_NOT_FOUND and "is not a folder" in done.err
