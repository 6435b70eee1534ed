"""An empty commit on a work tree's HEAD (P11: ``onRefusal: PushEmptyCommit``).

It changes no file; its only effect is a new commit on the branch, which a reconciler watching
the branch fetches and applies. Made by the committer, with ``--allow-empty``, on whatever the
work tree's HEAD is (the owner resets it to the tip first, so the commit holds nothing else).
"""

from __future__ import annotations

import git

from shared.git.errors import GitTemporary
from shared.git.workspace import Committer, Workspace


def commit_empty(ws: Workspace, message: str, committer: Committer) -> str:
    """Commit nothing on HEAD; the new commit's sha."""
    who = {
        "GIT_AUTHOR_NAME": committer.name,
        "GIT_AUTHOR_EMAIL": committer.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }
    repo = git.Repo(ws.directory)
    status, out, err = repo.git.commit(
        "-q",
        "--allow-empty",
        "--no-verify",
        "-m",
        message,
        env=who,
        with_extended_output=True,
        with_exceptions=False,
    )
    if status != 0:
        raise GitTemporary(f"empty commit failed: {err.strip() or out.strip()}")
    return ws.head()
