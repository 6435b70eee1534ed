"""Artifact storage shared by the two doubles, as source-controller's storage server.

source-controller archives each fetched commit as ``<kind>/<namespace>/<name>/<sha>.tar.gz`` in
its storage and advertises it in ``status.artifact`` (``path``, ``url``, ``digest``
``sha256:<hex>`` of the tarball, ``revision``, ``lastUpdateTime``, ``size``; fluxcd/pkg
``apis/meta/artifact.go``, ../shared/facts/appliers.md F2). kustomize-controller downloads the
tarball by URL, checks the digest and untars it. Here both doubles share one directory, so
"downloading" is reading the file at ``path`` under the storage root; the URL keeps the real
in-cluster host name for fidelity and is never dialled.
"""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from typing import Any

from sandbox.flux.conditions import timestamp

STORAGE_HOST = "source-controller.flux-system.svc.cluster.local."


class ArtifactMissing(Exception):
    """The advertised artifact is not in storage, or its digest does not match."""


class Storage:
    """The artifact directory: archive paths, advertised metadata, verified extraction."""

    def __init__(self, root: Path) -> None:
        self._root = root
        root.mkdir(parents=True, exist_ok=True)

    def path_for(self, namespace: str, name: str, sha: str) -> str:
        """The storage path of a GitRepository's artifact for commit ``sha``."""
        return f"gitrepository/{namespace}/{name}/{sha}.tar.gz"

    def local(self, path: str) -> Path:
        """Where a storage path lives on disk; ArtifactMissing if it points outside storage."""
        root = self._root.resolve()
        local = (root / path).resolve()
        if root not in local.parents:
            raise ArtifactMissing(f"artifact path {path!r} is outside the storage")
        return local

    def describe(self, path: str, revision: str, now: float) -> dict[str, Any]:
        """``status.artifact`` for the tarball stored at ``path``."""
        data = self.local(path).read_bytes()
        return {
            "revision": revision,
            "path": path,
            "url": f"http://{STORAGE_HOST}/{path}",
            "digest": f"sha256:{hashlib.sha256(data).hexdigest()}",
            "size": len(data),
            "lastUpdateTime": timestamp(now),
        }

    def holds(self, artifact: dict[str, Any]) -> bool:
        """Whether the advertised artifact is in storage with the advertised digest."""
        try:
            self._verified(artifact)
        except ArtifactMissing:
            return False
        return True

    def extract(self, artifact: dict[str, Any], dest: Path) -> None:
        """Untar a verified artifact into ``dest``; ArtifactMissing if absent or altered."""
        local = self._verified(artifact)
        with tarfile.open(local, "r:gz") as archive:
            archive.extractall(dest, filter="data")

    def _verified(self, artifact: dict[str, Any]) -> Path:
        local = self.local(str(artifact.get("path", "")))
        if not local.is_file():
            raise ArtifactMissing(f"artifact not found: {artifact.get('url', local)}")
        digest = f"sha256:{hashlib.sha256(local.read_bytes()).hexdigest()}"
        if digest != artifact.get("digest"):
            raise ArtifactMissing(
                f"failed to verify artifact: computed digest {digest} "
                f"doesn't match '{artifact.get('digest')}'"
            )
        return local
