"""A GitTarget's folder as it stands in the work tree: which object lives in which file.

Objects are found by identity (group, kind, namespace, name) wherever their file is (M4), and a
folder holding a file that is neither a manifest nor a recognised document is refused (M10).
So is a folder whose real path is not its name (it, or a folder above it, is a symbolic link)
and a folder holding a symbolic link anywhere: a write through a link would leave ``spec.path``
(the reliability probe's symlinked-folder finding), or the work tree (C6).

A folder holding a kustomization file is read through the kustomize subset instead (P2): its
objects are what the kustomizations render (``tree``), and anything outside the subset
refuses the folder with ``UnsupportedContent`` naming the feature.

Paths the folder's ``.gittargetignore`` matches are neither indexed nor refused (P4); a pattern
that hides what the writer writes refuses the folder (``IgnoreShadowsManagedPath``).

A file the folder's content makes unreadable (a ``.gittargetignore`` too large to compile, a
kustomization resource through a symbolic link out of the work tree) refuses this folder with
``UnsupportedContent`` (``Unreadable``): one tenant's content never stops the branch or the
process for the others.
"""

from __future__ import annotations

import errno
import hashlib
from dataclasses import dataclass
from typing import Any

from shared import kustomize
from shared.decide.ignore import IGNORE_FILE, Ignore
from shared.decide.ignore import REASON as SHADOWS
from shared.decide.ignore import Unreadable as IgnoreUnreadable
from shared.decide.placement import FolderVerdict, inside, is_manifest, is_recognised
from shared.git.errors import PathEscapes
from shared.git.workspace import Workspace
from shared.model.manifest import parse

IdentityKey = tuple[str, str, str, str]
#: Read failures of the machine, not of the folder's content: the branch fails and retries.
MACHINE_ERRNOS = frozenset({errno.EIO, errno.ENOMEM, errno.ENOSPC, errno.EMFILE, errno.ENFILE})


class Unreadable(Exception):
    """A file of the folder that cannot be read for what the folder holds: the folder is
    refused with ``UnsupportedContent`` naming the file."""

    def __init__(self, file: str, detail: str) -> None:
        self.file = file
        super().__init__(f"{file} cannot be read: {detail}")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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

    def __init__(
        self,
        workspace: Workspace,
        path: str,
        rendered: dict[str, str] | None = None,
    ) -> None:
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
        self.ignore = Ignore(path)
        #: Objects whose documents are in ignored files: the writer must not write them.
        self._hidden: dict[IdentityKey, str] = {}
        #: file -> digest of the bytes the writer last rendered whole there. Kept by the
        #: branch across work-tree resets (a digest, not a flag, so it holds only while the
        #: file still has those bytes): re-rendering a large document to learn that a file is
        #: the product's cost as much as the write itself.
        self._rendered = {} if rendered is None else rendered
        #: file -> digest of the bytes the writer last edited there in place (P1): while the
        #: file still has them, its next edit goes straight to the in-place edit, without
        #: rendering its documents whole to learn that the file is a person's.
        self._edited: dict[str, str] = {}
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
        try:
            self._read_files()
        except Unreadable as err:
            self._elsewhere = FolderVerdict(False, err.file, "UnsupportedContent", str(err))

    def _read_files(self) -> None:
        self._read_ignore()
        if any(kustomize.is_kustomization(f) for f in self.files):
            self._render()
            return
        for file in self.files:
            self.reindex(file)

    def _read(self, path: str) -> bytes | None:
        """A file of the work tree, for this folder: the one place where a read the folder's
        content makes fail (a kustomization resource through a symbolic link out of the work
        tree, a loop of links, a name too long) becomes ``Unreadable``, which refuses this
        folder only (N8: ``PathEscapes`` stalled the whole branch). A failure of the machine
        (``MACHINE_ERRNOS``) is the branch's, and retried."""
        try:
            return self._ws.read(path)
        except PathEscapes as err:
            raise Unreadable(path, str(err)) from err
        except OSError as err:
            if err.errno in MACHINE_ERRNOS:
                raise
            raise Unreadable(path, err.strerror or str(err)) from err

    def _render(self) -> None:
        """Kustomize mode: non-manifests are checked as ever, manifests by the render."""
        for file in self.files:
            if not is_manifest(file) and not kustomize.is_kustomization(file):
                self.reindex(file)
        try:
            self.tree = kustomize.render_folder(self.path, self.files, self._read)
        except kustomize.Unsupported as err:
            self.tree, self._unsupported = None, err

    def _read_ignore(self) -> None:
        ignore_file = inside(self.path, IGNORE_FILE)
        data = self._read(ignore_file)
        try:
            self.ignore = Ignore.parse(self.path, data.decode(errors="replace") if data else None)
        except IgnoreUnreadable as err:  # N1: too large, or patterns the matcher cannot take
            raise Unreadable(ignore_file, str(err)) from err
        probe = self.ignore.hides_every_manifest()
        if probe is not None:
            self._elsewhere = FolderVerdict(
                False,
                ignore_file,
                SHADOWS,
                f"{ignore_file} hides files gitops-reverser writes (it matches {probe!r})",
            )

    def _hide(self, file: str) -> None:
        """Remember the objects of an ignored manifest (read leniently, never refused)."""
        try:
            data = self._read(file)
        except Unreadable:  # an ignored path may hold anything
            return
        if data is None or not is_manifest(file):
            return
        try:
            docs = parse(data)
        except Exception:  # an ignored file may hold anything
            return
        for doc in docs:
            key = identity(doc)
            if key is not None:
                self._hidden[key] = file

    def shadowed(self, key: IdentityKey, path: str) -> FolderVerdict | None:
        """Why writing ``key`` at ``path`` would write where ``.gittargetignore`` hides, if it
        would; the folder stays refused until it is read again (the next work-tree state)."""
        hidden = self._hidden.get(key)
        if hidden is None and not self.ignore.ignores(path):
            return None
        where = hidden or path
        self._elsewhere = FolderVerdict(
            False,
            where,
            SHADOWS,
            f"{inside(self.path, IGNORE_FILE)} hides {where}, where gitops-reverser writes "
            f"{key[1]} {'/'.join(filter(None, key[2:]))}",
        )
        return self._elsewhere

    @property
    def holds_objects(self) -> bool:
        """Whether any object document is in the folder (none: the next write is the first)."""
        return bool(self._where)

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

    def refused_files(self) -> dict[str, str]:
        """Every file that refuses the folder, with its reason (``verdict`` names the first);
        ``gitops-reverser analyze`` lists them all."""
        return dict(self._bad)

    def reindex(self, file: str) -> None:
        """Read one file again after it changed outside the writer (or on first sight)."""
        self._forget(file)
        if self.ignore.ignores(file):
            self._hide(file)
            return
        data = self._read(file)
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

    def record(
        self,
        file: str,
        documents: list[dict[str, Any]],
        rendered: bytes | None = None,
        edited: bytes | None = None,
    ) -> None:
        """The writer just wrote ``documents`` to ``file`` (``rendered`` whole, M2, or
        ``edited`` in place, P1), or deleted it when there are none: index them as written,
        without reading the file back and parsing it (parsing was the largest cost of a
        snapshot)."""
        self._forget(file)
        self._rendered.pop(file, None)
        self._edited.pop(file, None)
        if documents:
            self._index(file, documents)
            if rendered is not None:
                self._rendered[file] = _digest(rendered)
            elif edited is not None:
                self._edited[file] = _digest(edited)

    def rendered(self, file: str, data: bytes) -> bool:
        """Whether ``data``, the bytes of ``file``, are what the writer rendered there: its
        next edit needs no in-place edit (P1) and no check that it is the product's."""
        return self._rendered.get(file) == _digest(data)

    def edited_in_place(self, file: str, data: bytes) -> bool:
        """Whether ``data``, the bytes of ``file``, are what the writer last edited there in
        place (P1): a person's file, to be edited in place again."""
        return self._edited.get(file) == _digest(data)

    def object_files(self) -> list[str]:
        """The files that hold the folder's objects as indexed now (the writer's own writes
        and deletes included; ``files`` is the folder as last scanned)."""
        return sorted(self._keys_of)

    def kustomized(self, files: list[str], tree: kustomize.Tree) -> None:
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
