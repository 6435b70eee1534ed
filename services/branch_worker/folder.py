"""A GitTarget's folder as it stands in the work tree: which object lives in which file.

Objects are found by identity (group, kind, namespace, name) wherever their file is (M4), and a
folder holding a file that is neither a manifest nor a recognised document is refused (M10).
So is a folder whose real path is not its name (it, or a folder above it, is a symbolic link)
and a folder holding a symbolic link anywhere: a write through a link would leave ``spec.path``
(the reliability probe's symlinked-folder finding), or the work tree (C6).

A folder holding a kustomization file is read through the kustomize subset instead (P2): its
objects are what the kustomizations render (``tree``), and anything outside the subset
refuses the folder with ``UnsupportedContent`` naming the feature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.decide.placement import FolderVerdict, is_manifest, is_recognised
from shared.git.errors import PathEscapes
from shared.git.workspace import Workspace
from shared.model import kustomize
from shared.model.manifest import parse

IdentityKey = tuple[str, str, str, str]


def identity(doc: dict[str, Any]) -> IdentityKey | None:
    """(group, kind, namespace, name) of a manifest document, or None if it is not an object."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    metadata = doc.get("metadata")
    if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(metadata, dict)):
        return None
    name = metadata.get("name")
    if not isinstance(name, str):
        return None
    group = api_version.rpartition("/")[0]
    return (group, kind, str(metadata.get("namespace") or ""), name)


@dataclass(slots=True)
class Located:
    """Where an object's document is: its file, its index there, and all of that file's docs."""

    path: str
    index: int
    documents: list[dict[str, Any]]


class Folder:
    """An index of the manifests under one folder of a work tree, kept current by the writer.

    Built once per work-tree state (a reset rebuilds it); each write re-reads only the file it
    touched, so a burst of writes costs one parse per write, not one per file per write.
    """

    def __init__(self, workspace: Workspace, path: str) -> None:
        self.path = path
        self._ws = workspace
        self._where: dict[IdentityKey, Located] = {}
        #: The keys each file was indexed under, so forgetting a file costs its own documents
        #: only (a snapshot of N objects writes N files: a scan of the whole index per write
        #: made it quadratic).
        self._keys_of: dict[str, list[IdentityKey]] = {}
        self._bad: dict[str, str] = {}
        #: Why the folder itself cannot be written (its path leads elsewhere), if it cannot.
        self._elsewhere: FolderVerdict | None = None
        #: The files under the folder, and its render when it holds a kustomization (P2).
        self.files: list[str] = []
        self.tree: kustomize.Tree | None = None
        self._unsupported: kustomize.Unsupported | None = None
        try:
            if workspace.leads_elsewhere(path):
                self._elsewhere = FolderVerdict(
                    False, path, "PathOutsideTarget", f"{path!r} is a symbolic link, or inside one"
                )
                return
            scan = workspace.scan(path)
        except (PathEscapes, OSError) as err:  # a name the file system refuses, say
            self._elsewhere = FolderVerdict(False, path, "PathOutsideTarget", str(err))
            return
        for link in scan.links:
            self._bad[link] = "SymbolicLink"
        self.files = scan.files
        if any(kustomize.is_kustomization(f) for f in scan.files):
            self._render()
            return
        for file in scan.files:
            self.reindex(file)

    def _render(self) -> None:
        """Kustomize mode: non-manifests are checked as ever, manifests by the render."""
        for file in self.files:
            if not is_manifest(file) and not kustomize.is_kustomization(file):
                self.reindex(file)
        try:
            self.tree = kustomize.render_folder(self.path, self.files, self._ws.read)
        except kustomize.Unsupported as err:
            self.tree, self._unsupported = None, err

    @property
    def verdict(self) -> FolderVerdict:
        """Accepted, or the first file (by name) that makes the folder unsupported."""
        if self._elsewhere is not None:
            return self._elsewhere
        if self._unsupported is not None:
            err = self._unsupported
            return FolderVerdict(False, err.file, "UnsupportedContent", str(err))
        if not self._bad:
            return FolderVerdict(accepted=True)
        file = min(self._bad)
        reason = self._bad[file]
        if reason == "SymbolicLink":
            detail = f"{file} is a symbolic link; a write through it could leave {self.path!r}"
            return FolderVerdict(False, file, reason, detail)
        return FolderVerdict(False, file, reason)

    def reindex(self, file: str) -> None:
        """Read one file again after it changed outside the writer (or on first sight)."""
        self._forget(file)
        data = self._ws.read(file)
        if data is None or is_recognised(file):
            return
        if not is_manifest(file):
            self._bad[file] = "UnsupportedContent"
            return
        try:
            docs = parse(data)
        except Exception:
            self._bad[file] = "UnparsableManifest"
            return
        self._index(file, docs)

    def record(self, file: str, documents: list[dict[str, Any]]) -> None:
        """The writer just wrote ``documents`` to ``file`` (rendered, M2), or deleted it when
        there are none: index them as written, without reading the file back and parsing it
        (parsing was the largest cost of a snapshot)."""
        self._forget(file)
        if documents:
            self._index(file, documents)

    def rendered(self, files: list[str], tree: kustomize.Tree) -> None:
        """A kustomize folder after a write (P2): its files and the render the writer just
        verified, so the next write starts from it without reading the folder again."""
        self.files, self.tree = files, tree

    def _forget(self, file: str) -> None:
        self._bad.pop(file, None)
        for key in self._keys_of.pop(file, ()):
            located = self._where.get(key)
            if located is not None and located.path == file:
                del self._where[key]

    def _index(self, file: str, docs: list[dict[str, Any]]) -> None:
        keys = [identity(doc) for doc in docs]
        if any(key is None for key in keys):
            self._bad[file] = "UnsupportedContent"
            return
        indexed = self._keys_of[file] = []
        for index, key in enumerate(keys):
            assert key is not None
            self._where[key] = Located(file, index, docs)
            indexed.append(key)

    def identities(self) -> list[IdentityKey]:
        """Every object with a document in the folder (D2 compares them with a listing)."""
        if self.tree is not None:
            return [r.key for r in self.tree.objects]
        return list(self._where)

    def find(self, key: IdentityKey) -> Located | None:
        """The document of an object, wherever it is in the folder."""
        return self._where.get(key)
