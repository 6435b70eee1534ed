"""The repo-server's part: resolve ``targetRevision`` and render the folder at a commit.

Facts: ../shared/facts/appliers.md A1 (``targetRevision`` may be a commit, a tag or a branch;
omitted means ``HEAD``) and A2 (the controller overwrites ``syncResult.revision`` with the
concrete commit). Resolution asks the remote with ``git ls-remote`` (the Flux double's
``GitCache``): ``HEAD`` or nothing is the remote's HEAD, 40 hex digits are a commit, a
``refs/...`` name is that ref, anything else a branch, then a tag, of that name. Rendering
fetches the commit into a cache and reads every manifest under ``spec.source.path`` with the
Flux double's plain-YAML build (``sandbox.flux.manifests``: no Helm, Kustomize or plugins).
Rendered folders are kept per (repository, commit, path): a commit never changes.
"""

from __future__ import annotations

import copy
import hashlib
import re
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from sandbox.flux import manifests
from sandbox.flux.gitsource import GitCache, GitFailure, GitRef

GIT_TIMEOUT_S = 60.0
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class RenderFailed(Exception):
    """The revision cannot be resolved or the folder cannot be rendered (a ComparisonError)."""


class Renderer:
    """Resolves revisions and renders folders from the sandbox Git host with real ``git``."""

    def __init__(self, root: Path) -> None:
        self._git = GitCache(root)
        self._rendered: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def resolve(self, url: str, target: str) -> str:
        """The commit ``target`` points at on the remote now."""
        target = target or "HEAD"
        if _COMMIT.match(target):
            return target
        candidates = (
            [target]
            if target == "HEAD" or target.startswith("refs/")
            else [f"refs/heads/{target}", f"refs/tags/{target}"]
        )
        last: GitFailure | None = None
        for ref in candidates:
            try:
                return self._git.remote_sha(url, ref, GIT_TIMEOUT_S)
            except GitFailure as err:
                last = err
        raise RenderFailed(f"unable to resolve '{target}' to a commit SHA: {last}")

    def objects(self, url: str, sha: str, path: str) -> list[dict[str, Any]]:
        """Every object under ``path`` at ``sha`` (copies: callers may edit them)."""
        key = (url, sha, path)
        with self._lock:
            if key not in self._rendered:
                self._rendered[key] = self._render(url, sha, path)
            return copy.deepcopy(self._rendered[key])

    def _render(self, url: str, sha: str, path: str) -> list[dict[str, Any]]:
        cache = hashlib.sha256(url.encode()).hexdigest()[:16]
        try:
            repo = self._git.fetch(cache, url, GitRef(), sha, GIT_TIMEOUT_S)
            with tempfile.TemporaryDirectory(prefix="argocd-render-") as scratch:
                tarball = Path(scratch) / "tree.tar.gz"
                self._git.archive(repo, sha, tarball, GIT_TIMEOUT_S)
                tree = Path(scratch) / "tree"
                with tarfile.open(tarball, "r:gz") as archive:
                    archive.extractall(tree, filter="data")
                root = (tree / path.lstrip("/")).resolve()
                if root != tree.resolve() and tree.resolve() not in root.parents:
                    raise RenderFailed(f"path '{path}' leaves the repository")
                if not root.is_dir():
                    raise RenderFailed(f"{path}: app path does not exist")
                return manifests.read_objects(root)
        except (GitFailure, manifests.BuildFailed) as err:
            raise RenderFailed(str(err)) from err
