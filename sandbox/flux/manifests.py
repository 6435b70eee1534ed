"""Build step of the kustomize-controller double: the objects under ``spec.path``.

kustomize-controller runs ``kustomize build`` on ``spec.path`` of the artifact, generating a
``kustomization.yaml`` that lists the directory's manifests when there is none
(../shared/facts/appliers.md F3, ``spec.path``). The double does the part the product needs:
every YAML document in every ``*.yaml``/``*.yml`` file under the path, in path order, each of
which must carry ``apiVersion``, ``kind`` and ``metadata.name`` (as the controller checks after
the build). Each file is read as the controller reads it, with yaml.v3's rules (``goyaml``):
``enabled: yes`` is the string ``yes``, as it is for the real controller, not a boolean. A
``kustomization.yaml`` at ``spec.path`` is built by ``kustomize_build`` (the subset the product
writes); one deeper in a folder without its own is not supported and fails the build with a
message saying so, rather than being applied differently.

After the build come the controller's object edits: ``spec.targetNamespace`` for namespaced
objects, and the owner labels ``kustomize.toolkit.fluxcd.io/name`` and ``/namespace`` on every
object (fluxcd/pkg ``ssa/manager.go`` ``SetOwnerLabels``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sandbox.flux import goyaml

OWNER_NAME = "kustomize.toolkit.fluxcd.io/name"
OWNER_NAMESPACE = "kustomize.toolkit.fluxcd.io/namespace"
KUSTOMIZE_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUFFIXES = (".yaml", ".yml")


class BuildFailed(Exception):
    """The manifests under the path cannot be turned into objects."""


def read_objects(root: Path) -> list[dict[str, Any]]:
    """Every Kubernetes object in the YAML files under ``root``, in path order."""
    objects: list[dict[str, Any]] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name in KUSTOMIZE_FILES:
            raise BuildFailed(
                f"kustomize build failed: {path.relative_to(root)}: "
                "kustomization files are not supported by the sandbox double"
            )
        if path.suffix in SUFFIXES:
            objects.extend(_documents(path, root))
    return objects


def _documents(path: Path, root: Path) -> list[dict[str, Any]]:
    try:
        documents = goyaml.load_all(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, goyaml.JsonUnsupported, UnicodeDecodeError) as err:
        raise BuildFailed(f"kustomize build failed: {path.relative_to(root)}: {err}") from err
    objects = []
    for document in documents:
        if document is None:
            continue
        if not _is_object(document):
            raise BuildFailed(
                "failed to decode Kubernetes apiVersion, kind and name from: "
                f"{path.relative_to(root)}"
            )
        objects.append(document)
    return objects


def _is_object(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    meta = document.get("metadata")
    return bool(
        document.get("apiVersion")
        and document.get("kind")
        and isinstance(meta, dict)
        and meta.get("name")
    )


def set_owner(objects: list[dict[str, Any]], name: str, namespace: str) -> None:
    """Add the Kustomization's owner labels to every object (in place)."""
    for obj in objects:
        labels = obj["metadata"].setdefault("labels", {}) or {}
        labels[OWNER_NAME] = name
        labels[OWNER_NAMESPACE] = namespace
        obj["metadata"]["labels"] = labels


def set_namespace(obj: dict[str, Any], namespaced: bool, target: str) -> None:
    """Put a namespaced object into ``target`` (``spec.targetNamespace``) when one is set."""
    if namespaced and target:
        obj["metadata"]["namespace"] = target
