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


def third_party_crd_files() -> list[Path]:
    """The real Flux and Argo CD CRD files, in a stable order."""
    return sorted((shared_dir() / "crds").glob("*/*.yaml"))


def own_crd_files() -> list[Path]:
    """The project's own CRDs, as the chart installs them."""
    return sorted(CHART_CRDS.glob("*.yaml"))


def all_crd_files() -> list[Path]:
    """Every CRD the sandbox API server loads by default."""
    return own_crd_files() + third_party_crd_files()
