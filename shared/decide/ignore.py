"""``.gittargetignore``: paths of a GitTarget's folder that the writer leaves alone (P4).

The file uses gitignore syntax (matched by ``pathspec``, the gitignore implementation pip and
black use), relative to the folder. An ignored path is neither managed nor refused: the folder
may hold anything there. A pattern must not hide a path the writer would write: a pattern that
hides every manifest the writer could place (``*``, ``**``, ``*.yaml``, ``team/``...) refuses
the folder at once, and one that hides the file of an object the writer is asked to write
refuses it then; both with ``IgnoreShadowsManagedPath``, a condition the user sees on the
GitTarget. A file the matcher cannot take (longer than ``MAX_CHARS``, a pattern gitignore does
not allow, or patterns too many or too long for the regular-expression engine to compile: the
probe's 100,000-character line raised ``re2.Error`` and stopped the branch worker) raises
``Unreadable``, and the caller refuses that folder only. Pure: the caller reads the file.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import pathspec

IGNORE_FILE = ".gittargetignore"
REASON = "IgnoreShadowsManagedPath"
#: Longest ``.gittargetignore`` read, in characters: a real one is a few lines; compiling the
#: patterns grows with their length (1,500 short lines took 0.8 s) and is done for every state
#: of the work tree, so a larger file refuses its folder instead of costing every pass.
MAX_CHARS = 8 * 1024
#: Paths of the shapes the writer places new objects at (a namespaced object of the core
#: group, one of a named group, a cluster-scoped one), with names nobody uses: a pattern that
#: matches one of them hides objects the writer has not been asked about yet.
PROBES = (
    "gitops-reverser-probe/configmaps/gitops-reverser-probe.yaml",
    "gitops-reverser-probe/apps.example.com/widgets/gitops-reverser-probe.yaml",
    "_cluster/apps.example.com/widgets/gitops-reverser-probe.yaml",
)


class Unreadable(ValueError):
    """A ``.gittargetignore`` the matcher cannot take; the message says why."""


@dataclass(frozen=True, slots=True)
class Ignore:
    """The patterns of one folder's ``.gittargetignore`` (none: nothing ignored)."""

    folder: str
    spec: pathspec.GitIgnoreSpec | None = None

    @classmethod
    def parse(cls, folder: str, text: str | None) -> Ignore:
        """The patterns of ``text`` (None or only comments: nothing is ignored); raises
        ``Unreadable`` for a file the matcher cannot take."""
        if text is None:
            return cls(folder)
        if len(text) > MAX_CHARS:
            raise Unreadable(f"it is longer than {MAX_CHARS} characters ({len(text)})")
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        except Exception as err:  # pathspec's pattern errors, its regex backend's (re2.Error)
            raise Unreadable(f"its patterns cannot be compiled: {err}") from err
        real = any(pattern.include is not None for pattern in spec.patterns)
        return cls(folder, spec if real else None)

    def ignores(self, path: str) -> bool:
        """Whether ``path`` (repository-relative, inside the folder) is ignored."""
        if self.spec is None:
            return False
        relative = posixpath.relpath(path, self.folder or ".")
        return posixpath.basename(path) != IGNORE_FILE and self.spec.match_file(relative)

    def hides_every_manifest(self) -> str | None:
        """The probe path a pattern hides, when one does: the folder is refused."""
        if self.spec is None:
            return None
        return next((probe for probe in PROBES if self.spec.match_file(probe)), None)
