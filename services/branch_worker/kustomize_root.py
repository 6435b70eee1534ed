"""``spec.placement.useKustomize``: the root ``kustomization.yaml`` of a GitTarget's folder.

A folder without a kustomization gets one at its root before its first write, listing every
manifest it already holds (with ``namespace:`` the GitTarget's namespace under
``serializeNamespace: false``, so the files leave ``metadata.namespace`` out). From then on the
folder is a kustomize folder (P2): a new file is added to the ``resources`` of the kustomization
above it and a deleted one taken out (``shared.kustomize.edit``), so the root lists every file
the GitTarget writes through creates and deletes, and each write is verified on the render.
A cluster-scoped object the root's ``namespace:`` would change when rendered (a Namespace of
another name, a kind kustomize does not know as cluster-scoped, a binding's ``default``
subject) is refused by that verification; ``renamed_by_namespace`` says so in its message.
"""

from __future__ import annotations

import posixpath
from typing import Any

from services.branch_worker.folder import Folder
from shared import kustomize
from shared.decide.bootstrap import BOOTSTRAP_FILES
from shared.decide.placement import RECOGNISED_NAMES, inside, is_manifest
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.manifest import render

ROOT = "kustomization.yaml"


def root_document(target: TargetConfig, files: list[str]) -> bytes:
    """The root kustomization listing ``files`` (paths of the work tree)."""
    base = inside(target.path, ".")
    doc: dict[str, object] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
    }
    if not target.placement.serialize_namespace:
        doc["namespace"] = target.namespace
    doc["resources"] = [posixpath.relpath(f, base or ".") for f in sorted(files)]
    return render(doc)


def ensure_root(workspace: Workspace, target: TargetConfig, folder: Folder) -> str:
    """Write the root kustomization where ``useKustomize`` asks for one and the folder has
    none, and make ``folder`` a kustomize folder; returns why the folder cannot be rendered
    ("": it can, or nothing was asked)."""
    if not target.placement.use_kustomize or folder.tree is not None:
        return ""
    if any(kustomize.is_kustomization(f) for f in folder.files):
        return ""  # a kustomization the render could not take: the folder says why
    listed = [f for f in folder.object_files() if posixpath.basename(f) not in RECOGNISED_NAMES]
    root = inside(target.path, ROOT)
    workspace.write(root, root_document(target, listed))
    if not listed:  # P4: the folder's first object brings the bootstrap files, as elsewhere
        for file in BOOTSTRAP_FILES:
            path, content = inside(target.path, file.name), file.content(target)
            if content is not None and workspace.read(path) is None:
                workspace.write(path, content)
    others = [f for f in folder.files if not is_manifest(f) or f not in folder.object_files()]
    files = sorted({*listed, *(f for f in others if workspace.read(f) is not None), root})
    try:
        folder.kustomized(files, kustomize.render_folder(target.path, files, workspace.read))
    except kustomize.Unsupported as err:
        workspace.delete(root)
        return str(err)
    return ""


def renamed_by_namespace(tree: kustomize.Tree, body: dict[str, Any] | None, path: str) -> str:
    """Why a cluster-scoped object cannot be written at ``path`` of a kustomize folder whose
    kustomization above it sets ``namespace:`` (with ``serializeNamespace: false``, the root
    the product keeps): the render would change it, so the write was refused ("" when that is
    not the reason)."""
    meta = (body or {}).get("metadata") or {}
    if body is None or meta.get("namespace"):
        return ""
    for kust in sorted(tree.kustomizations.values(), key=lambda k: -len(k.dir)):
        namespace = kust.data.get("namespace")
        if not isinstance(namespace, str) or not namespace or not _below(path, kust.dir):
            continue
        effect = kustomize.namespace_effect(body, namespace)
        if effect:
            return (
                f"{body.get('kind')} {meta.get('name')}: {kust.file} sets namespace: "
                f"{namespace}, which {effect} when the folder is rendered, so it is not "
                "written there (a cluster-scoped object that namespace changes belongs in a "
                "GitTarget without spec.serializeNamespace: false, or a folder whose "
                "kustomization sets no namespace)"
            )
    return ""


def _below(path: str, directory: str) -> bool:
    return not directory or path.startswith(directory + "/")
