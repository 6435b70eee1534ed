"""git failures, classified once at the adapter boundary.

``GitPermanent`` will not heal by retrying (bad credentials, no such repository);
``GitTemporary`` may (network, a remote that is restarting).
"""

from __future__ import annotations


class GitError(Exception):
    """Base of every error the git adapter raises."""


class GitPermanent(GitError):
    """Retrying will not help: report it and stall."""


class GitTemporary(GitError):
    """Retrying later may help: back off and try again."""


class PathEscapes(GitPermanent):
    """A path that leaves the work tree (by its words or through a symbolic link): the write is
    refused, never retried."""


class WriteNotHeld(GitPermanent):
    """A commit that does not hold what was written for it (a write gone astray): nothing of
    it may be acknowledged."""
