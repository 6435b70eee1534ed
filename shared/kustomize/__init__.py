"""The kustomize subset a GitTarget's folder may use (P2): read, rendered and edited here.

GitOps Reverser reads a small part of kustomize (../shared/facts/upstream-gitops-reverser.md
3.4; docs/kustomize.md lists it field by field) and refuses the whole folder for anything else
(1.11). The package is pure: every file comes through a ``Reader`` the caller gives (the branch
worker its work tree, the tests a dict), and import-linter holds it to that ("shared.kustomize
is pure"). Its renders are compared with ``kubectl kustomize`` by a corpus of folders
(tests/unit/kustomize/test_differential.py).

- ``subset``: a kustomization file as read, and what it may hold;
- ``render``: a folder's render (``render_folder``), within the ``bounds`` of N4;
- ``patch``, ``transform``: strategic-merge patches and the kustomization's transformers;
- ``edit``: an API edit as file edits (``plan_upsert``, ``plan_delete``) and its check
  (``verify``);
- ``refusals``: ``Unsupported`` (a folder) and ``Refused`` (a write).
"""

from shared.kustomize.bounds import MAX_DEPTH, MAX_WORK
from shared.kustomize.edit import Plan, plan_delete, plan_upsert, verify
from shared.kustomize.patch import merge
from shared.kustomize.refusals import Refused, Unsupported
from shared.kustomize.render import build, render_folder
from shared.kustomize.subset import (
    KUSTOMIZATION_FILES,
    SUPPORTED_FIELDS,
    Kustomization,
    Reader,
    is_kustomization,
    kustomization_in,
    load,
)
from shared.kustomize.transform import images_of, namespace_effect, set_image, split_image
from shared.kustomize.tree import Path, Rendered, Tree, key_of

__all__ = [
    "KUSTOMIZATION_FILES",
    "MAX_DEPTH",
    "MAX_WORK",
    "SUPPORTED_FIELDS",
    "Kustomization",
    "Path",
    "Plan",
    "Reader",
    "Refused",
    "Rendered",
    "Tree",
    "Unsupported",
    "build",
    "images_of",
    "is_kustomization",
    "key_of",
    "kustomization_in",
    "load",
    "merge",
    "namespace_effect",
    "plan_delete",
    "plan_upsert",
    "render_folder",
    "set_image",
    "split_image",
    "verify",
]
