"""Committing a branch's closed windows (C1, P5, P6, D1): the message, the author, the
signature, and the commits made but not pushed yet.

A window whose folder is held, or whose key cannot be had, goes to the hold (``holds.py``)
instead of being committed: a GitTarget that asks for signed commits never gets an unsigned
one, and its writes are never dropped.
"""

from __future__ import annotations

from services.branch_worker import metrics
from services.branch_worker.commit_requests import message_for
from services.branch_worker.conditions import Conditions
from services.branch_worker.holds import Holds
from services.branch_worker.messages import committer, message
from services.branch_worker.signing import Signer, SigningUnavailable
from services.branch_worker.windows import ClosedWindow, OpenWindow
from shared.git.errors import WriteNotHeld
from shared.git.workspace import Committer, Workspace
from shared.model.attribution import Author
from shared.model.config import BranchConfig, TargetConfig


class Commits:
    """One owner's commits: made in the work tree, kept until their push lands."""

    def __init__(
        self,
        config: BranchConfig,
        workspace: Workspace,
        *,
        signer: Signer,
        conditions: Conditions,
        holds: Holds,
    ) -> None:
        self._config = config
        self._ws = workspace
        #: The key file each GitTarget's commits are signed with (``spec.commit.signing``).
        self._signer = signer
        self._conditions = conditions
        self._holds = holds
        #: Committed windows not pushed yet, oldest first.
        self.closed: list[ClosedWindow] = []

    def commit(self, window: OpenWindow, signer: Signer | None = None) -> None:
        """Commit a closed window (``signer``: the key already read for it, else this
        owner's signer reads it)."""
        blocker = self._holds.blocker(window.target)
        if blocker is not None:  # P6: nothing of a held folder is committed, signed or not
            self._holds.hold(window, blocker, None)
            return
        text, problem = message(self._config, window)
        self._conditions.template(window.target.uid, problem)  # T4; built-in wording meanwhile
        if message_for(window.requests):  # P6: the request's message replaces the whole one
            text = message_for(window.requests)
        try:
            sha = self.files(window.target, text, window.author, signer)
        except SigningUnavailable as err:
            self._holds.hold(window, window.target, err)
            return
        self.closed.append(
            ClosedWindow(window.target, text, window.entries, window.author, window.requests, sha)
        )
        if sha:
            metrics.COMMITS.inc()

    def again(self, closed: ClosedWindow, window: OpenWindow) -> bool:
        """M7: commit a closed window again on a new tip, ``window`` being what is left of it
        there; False when it is held (its folder held, or its key out) instead."""
        if len(window.entries) < len(closed.entries):
            closed.entries = window.entries
            if not message_for(closed.requests):
                closed.message = message(self._config, window)[0]
        blocker = self._holds.blocker(closed.target)
        if blocker is not None:
            self._holds.hold(window, blocker, None)
            return False
        try:
            closed.sha = self.files(  # P6: after replay
                closed.target, closed.message, closed.author
            )
        except SigningUnavailable as err:
            self._holds.hold(window, closed.target, err)
            return False
        return True

    def files(
        self,
        target: TargetConfig,
        text: str,
        author: Author | None = None,
        signer: Signer | None = None,
    ) -> str | None:
        """Commit the GitTarget's folder, signed when it asks for it (P6); SigningUnavailable
        when its key cannot be had, with nothing committed.

        D1: a commit that does not hold the folder's writes (``WriteNotHeld``, the last
        defence after the folder's own checks) is shown on the GitTarget as
        ``GitPathAccepted=False WriteNotHeld`` and fails the pass as before: nothing is
        acknowledged and the branch starts over. No Refusal is owed to the applier (the edit is
        not refused, only not yet written). The next commit of the folder that holds its writes
        lifts it."""
        try:
            with (signer or self._signer)(target) as key:
                sha = self._ws.commit(
                    text,
                    committer(self._config),
                    paths=(target.path or ".",),
                    signing_key=key,
                    author=Committer(author.name, author.email) if author else None,
                )
        except WriteNotHeld as err:
            self._conditions.not_held(target.uid, str(err))
            raise
        self._conditions.committed(target)
        return sha
