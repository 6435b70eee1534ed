"""The files of a work tree, read and written by repo-relative path, never outside it.

A path is refused when it leaves the work tree, by its words (absolute, ``..``, ``.git``) or
through a symbolic link (a commit may hold one): ``PathEscapes``. Each write is remembered with
the blob it must be once committed (or None, for a delete), so the commit can check that it
holds every write (M8, ``Workspace.commit``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shared.git.errors import PathEscapes


@dataclass(frozen=True, slots=True)
class FolderScan:
    """What a folder of the work tree holds: regular files, and symbolic links (to anything,
    or dangling), both as repo-relative paths, sorted. Links are not followed."""

    files: list[str]
    links: list[str]


class WorkFiles:
    """The files under ``directory`` (a work tree), and the writes since its last commit."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._root = directory.resolve()
        #: Folders of the work tree known to be real folders inside it (see ``_inside``);
        #: forgotten whenever git rewrites the work tree.
        self._real_dirs: set[str] = set()
        #: Files written or deleted since the last commit (``Workspace.commit`` packs many).
        self.written = 0
        #: Paths written since their last commit: the sha of the blob each must hold after
        #: it, or None for a deleted file (``Workspace.commit`` checks them).
        self.expected: dict[str, str | None] = {}

    def rewritten(self) -> None:
        """Git rewrote the whole work tree (a reset): nothing is known of it any more."""
        self._real_dirs.clear()
        self.written = 0
        self.expected.clear()

    def discarded(self, folder: str) -> None:
        """Git put ``folder`` back as HEAD holds it: its writes are gone."""
        self._real_dirs.clear()
        folders = [key(folder)]
        for path in [p for p in self.expected if under(p, folders)]:
            del self.expected[path]

    def committed(self, folders: list[str]) -> dict[str, str | None]:
        """The writes under ``folders`` (repo-relative, "" for all), no longer pending: the
        commit that took them checks them."""
        checked = {path: sha for path, sha in self.expected.items() if under(path, folders)}
        for path in checked:
            del self.expected[path]
        return checked

    def read(self, path: str) -> bytes | None:
        """A file's bytes in the work tree, or None."""
        try:
            return self._inside(path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write(self, path: str, data: bytes) -> None:
        """Write a file (creating folders)."""
        target = self._inside(path)
        if str(PurePosixPath(path).parent) not in self._real_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.written += 1
        self.expected[key(path)] = blob_sha(data)

    def write_if_changed(self, path: str, data: bytes) -> bool:
        """``write``, unless the file holds ``data`` already (False then): ``read`` and
        ``write`` with one check of the path (a snapshot writes thousands of new files, and the
        check was a seventh of its branch worker's time, made twice a file)."""
        target = self._inside(path)
        try:
            if target.read_bytes() == data:
                return False
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
        if str(PurePosixPath(path).parent) not in self._real_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.written += 1
        self.expected[key(path)] = blob_sha(data)
        return True

    def delete(self, path: str) -> None:
        """Remove a file if present."""
        self._inside(path).unlink(missing_ok=True)
        self.written += 1
        self.expected[key(path)] = None

    def files(self, folder: str) -> list[str]:
        """Repo-relative paths of the files under ``folder``."""
        return self.scan(folder).files

    def scan(self, folder: str) -> FolderScan:
        """The files and symbolic links under ``folder`` (links are listed, never followed)."""
        files: list[str] = []
        links: list[str] = []
        root = self._inside(folder)
        if root.is_symlink():
            return FolderScan([], [key(folder)])
        stack = [root] if root.is_dir() else []
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        continue
                    rel = os.path.relpath(entry.path, self.directory)
                    if entry.is_symlink():
                        links.append(rel)
                    elif entry.is_dir():
                        stack.append(Path(entry.path))
                    elif entry.is_file():
                        files.append(rel)
        return FolderScan(sorted(files), sorted(links))

    def leads_elsewhere(self, folder: str) -> bool:
        """Whether ``folder`` (or a folder above it) is a symbolic link, so that its real path
        is not the path its name says (one resolve per call: callers ask once per folder)."""
        logical = (self._root / PurePosixPath(key(folder))).absolute()
        try:
            return (self.directory / key(folder)).resolve() != logical
        except RuntimeError:  # a loop of symbolic links (Python 3.11 raises this, not OSError)
            return True

    def _inside(self, path: str) -> Path:
        """``path`` in the work tree, refused when it leaves it: by its words (absolute, ``..``,
        ``.git``) or through a symbolic link (a commit may hold one). Each folder is resolved
        once per work-tree state and remembered (resolving every path was a tenth of a
        snapshot's time); the file itself is checked on every call, with one ``lstat``."""
        rel = PurePosixPath(path)
        if not key(path):
            return self.directory  # the root of the work tree
        if rel.is_absolute() or ".." in rel.parts or ".git" in rel.parts:
            raise PathEscapes(f"path {path!r} leaves the work tree")
        target = self.directory / rel
        folder = str(rel.parent)
        if folder not in self._real_dirs:
            self._within(target.parent, path)
            if target.parent.is_dir():
                self._real_dirs.add(folder)
        if target.is_symlink():
            self._within(target, path)
        return target

    def _within(self, target: Path, path: str) -> None:
        try:
            real = target.resolve()
        except RuntimeError as err:  # a loop of symbolic links, which a commit may hold
            raise PathEscapes(f"path {path!r} goes through a loop of symbolic links") from err
        if not real.is_relative_to(self._root):
            raise PathEscapes(f"path {path!r} leaves the work tree")


def blob_sha(data: bytes) -> str:
    """The sha git gives a blob of ``data`` (``git hash-object``), computed in process."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def key(path: str) -> str:
    """A repo-relative path as git names it (no ``./``, no trailing ``/``; ``""`` for the root)."""
    text = str(PurePosixPath(path))
    return "" if text == "." else text


def under(path: str, folders: list[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one ("" is the root: everything)."""
    return any(not f or path == f or path.startswith(f + "/") for f in folders)
