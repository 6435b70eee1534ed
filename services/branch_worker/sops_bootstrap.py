"""The ``.sops.yaml`` bootstrap file of an encrypting GitTarget's folder (P4).

Kept as one small function so the writer's bootstrap hook (README.md, ``.gittargetignore``)
can stage it with the others: when ``spec.encryption`` is set, the folder holds the creation
rule the product encrypts with, so a person running ``sops`` there encrypts the same fields for
the same recipients. Written only when missing: a rule someone edited is theirs.
"""

from __future__ import annotations

from shared.decide.placement import inside
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.sops import sops_config

SOPS_CONFIG = ".sops.yaml"


def sops_bootstrap_files(target: TargetConfig) -> dict[str, bytes]:
    """The bootstrap files encryption adds under the GitTarget's path (none without it)."""
    if not target.recipients:
        return {}
    return {inside(target.path, SOPS_CONFIG): sops_config(target.recipients)}


def stage_sops_bootstrap(workspace: Workspace, target: TargetConfig) -> list[str]:
    """Write the missing ones; the paths written."""
    written = []
    for path, data in sops_bootstrap_files(target).items():
        if workspace.read(path) is None:
            workspace.write(path, data)
            written.append(path)
    return written
