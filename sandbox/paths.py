"""Where the sandbox finds the CRDs it serves.

The project's own CRDs live in the Helm chart; the real Flux and Argo CD CRDs are read from the
``shared/crds`` folder beside the checkout and never copied into the project.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHART_CRDS = REPO_ROOT / "charts" / "gitops-reverser" / "crds"
SHARED_DIR_ENV = "GITOPS_REVERSER_SHARED_DIR"


def shared_dir() -> Path:
    """The ``shared`` folder beside the checkout (override with GITOPS_REVERSER_SHARED_DIR)."""
    override = os.environ.get(SHARED_DIR_ENV)
    return Path(override) if override else REPO_ROOT.parent / "shared"


class MissingCrdsError(FileNotFoundError):
    """The real Flux and Argo CD CRDs are not where the sandbox looks for them."""


def third_party_crds_dir() -> Path:
    """Where the real Flux and Argo CD CRDs are read from."""
    return shared_dir() / "crds"


def missing_crds_message(folder: Path) -> str:
    """What to tell a person whose checkout has no ``shared/crds`` beside it."""
    return (
        f"third-party CRDs not found at {folder}; set {SHARED_DIR_ENV} to the folder holding crds/"
    )


def third_party_crd_files() -> list[Path]:
    """The real Flux and Argo CD CRD files, in a stable order.

    Raises MissingCrdsError when there are none: an API double without the Flux CRDs fails
    later and far from the cause (a 404 on a GitRepository, a KeyError on a schema).
    """
    folder = third_party_crds_dir()
    files = sorted(folder.glob("*/*.yaml"))
    if not files:
        raise MissingCrdsError(missing_crds_message(folder))
    return files


def own_crd_files() -> list[Path]:
    """The project's own CRDs, as the chart installs them."""
    return sorted(CHART_CRDS.glob("*.yaml"))


def all_crd_files() -> list[Path]:
    """Every CRD the sandbox API server loads by default."""
    return own_crd_files() + third_party_crd_files()
