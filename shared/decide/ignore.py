"""``.gittargetignore``: paths of a GitTarget's folder that the writer leaves alone (P4).

The file uses gitignore syntax (matched by ``pathspec``, the gitignore implementation pip and
black use), relative to the folder. An ignored path is neither managed nor refused: the folder
may hold anything there. A pattern must not hide a path the writer would write: a pattern that
hides every manifest the writer could place (``*``, ``**``, ``*.yaml``, ``team/``...) refuses
the folder at once, and one that hides the file of an object the writer is asked to write
refuses it then; both with ``IgnoreShadowsManagedPath``, a condition the user sees on the
GitTarget. Pure: the caller reads the file.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import pathspec

IGNORE_FILE = ".gittargetignore"
REASON = "IgnoreShadowsManagedPath"
#: Paths of the shapes the writer places new objects at (a namespaced object of the core
#: group, one of a named group, a cluster-scoped one), with names nobody uses: a pattern that
#: matches one of them hides objects the writer has not been asked about yet.
PROBES = (
    "gitops-reverser-probe/configmaps/gitops-reverser-probe.yaml",
    "gitops-reverser-probe/apps.example.com/widgets/gitops-reverser-probe.yaml",
    "_cluster/apps.example.com/widgets/gitops-reverser-probe.yaml",
)


@dataclass(frozen=True, slots=True)
class Ignore:
    """The patterns of one folder's ``.gittargetignore`` (none: nothing ignored)."""

    folder: str
    spec: pathspec.GitIgnoreSpec | None = None

    @classmethod
    def parse(cls, folder: str, text: str | None) -> Ignore:
        """The patterns of ``text`` (None or only comments: nothing is ignored)."""
        if text is None:
            return cls(folder)
        spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
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
