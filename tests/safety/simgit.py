"""A Git remote and work trees in memory: the branch worker's git seam, simulated.

The safety suite runs thousands of schedules, so git itself (a process per call) is replaced at
the narrowest seam the branch worker has: ``shared.git.workspace.Workspace`` (fetch, reset,
read, write, delete, scan, commit, head, push) and ``ls-remote``. The remote keeps every commit
and every move of its branch, so the suite can check that no push ever dropped a commit (M7:
compare-and-swap, never forced). Every call is a point where the calling actor may be paused
or crashed (``actors.yield_point``), and a push may land on the remote and crash before the
caller hears the answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from shared.git.workspace import Committer, FolderScan, PushResult
from tests.safety.actors import yield_point

Tree = dict[str, bytes]


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit: its parent, its whole tree and who made it (``ours`` or ``outside``)."""

    sha: str
    parent: str | None
    tree: Tree
    author: str


@dataclass(slots=True)
class SimRemote:
    """One repository with one branch, moved only by compare-and-swap pushes."""

    commits: dict[str, Commit] = field(default_factory=dict)
    tip: str | None = None
    #: Every value the branch took, in order (the no-force check walks it).
    moves: list[str] = field(default_factory=list)
    #: Moves that were not fast-forwards (a force): must stay empty.
    forced: list[tuple[str | None, str]] = field(default_factory=list)
    #: Successful pushes, in order, for the Git host's webhooks: (sha, author).
    pushes: list[tuple[str, str]] = field(default_factory=list)
    #: Where the remote tells the schedule's log about each move.
    say: Callable[[str], None] = print
    #: Whether a branch worker has fetched the branch yet (the product's first look at it).
    fetched: bool = False

    def make(self, parent: str | None, tree: Tree, author: str, message: str) -> str:
        """Store a commit and return its sha (content-addressed, like git)."""
        text = f"{parent}|{author}|{message}|{len(self.commits)}|" + "|".join(
            f"{p}={hashlib.sha1(d, usedforsecurity=False).hexdigest()}"
            for p, d in sorted(tree.items())
        )
        sha = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
        self.commits[sha] = Commit(sha, parent, dict(tree), author)
        return sha

    def descends(self, sha: str, ancestor: str | None) -> bool:
        """Whether ``ancestor`` is ``sha`` or one of its ancestors (None: the empty branch)."""
        if ancestor is None:
            return True
        cursor: str | None = sha
        while cursor is not None:
            if cursor == ancestor:
                return True
            cursor = self.commits[cursor].parent
        return False

    def cas(self, expected: str | None, new: str, author: str) -> bool:
        """Move the branch to ``new`` only if it is at ``expected`` (``--force-with-lease``)."""
        if self.tip != expected:
            return False
        if not self.descends(new, self.tip):
            self.forced.append((self.tip, new))
        if new != self.tip:
            self.tip = new
            self.moves.append(new)
            self.pushes.append((new, author))
            self.say(f"remote moves to {new[:6]} ({author})")
        return True

    def outside_push(self, changes: Tree, message: str) -> str:
        """Someone else commits ``changes`` on the tip and pushes (no force)."""
        base = dict(self.commits[self.tip].tree) if self.tip else {}
        base.update(changes)
        sha = self.make(self.tip, base, "outside", message)
        assert self.cas(self.tip, sha, "outside")
        return sha

    def tree(self, sha: str | None) -> Tree:
        """The tree of a commit (empty for no commit)."""
        return dict(self.commits[sha].tree) if sha else {}

    def history(self) -> list[str]:
        """The branch's commits from the root to the tip (first parents)."""
        chain: list[str] = []
        cursor = self.tip
        while cursor is not None:
            chain.append(cursor)
            cursor = self.commits[cursor].parent
        return chain[::-1]

    def ls_remote(self) -> str | None:
        """``git ls-remote``: the tip, read by the calling actor."""
        yield_point("ls-remote")
        return self.tip


class SimWorkspace:
    """``shared.git.workspace.Workspace`` over a ``SimRemote``, in memory."""

    def __init__(self, remote: SimRemote, directory: Path) -> None:
        self.remote = remote
        self.directory = directory
        self._head: str | None = None
        self._fetched: str | None = None
        self._tree: Tree = {}

    def fetch(self) -> str | None:
        yield_point("fetch")
        self.remote.fetched = True
        self._fetched = self.remote.tip
        return self._fetched

    def reset(self, tip: str | None) -> None:
        yield_point("reset")
        self._head = tip
        self._tree = self.remote.tree(tip)

    def read(self, path: str) -> bytes | None:
        return self._tree.get(_key(path))

    def write(self, path: str, data: bytes) -> None:
        self._tree[_key(path)] = data

    def write_if_changed(self, path: str, data: bytes) -> bool:
        if self.read(path) == data:
            return False
        self.write(path, data)
        return True

    def delete(self, path: str) -> None:
        self._tree.pop(_key(path), None)

    def files(self, folder: str) -> list[str]:
        return self.scan(folder).files

    def scan(self, folder: str) -> FolderScan:
        prefix = _key(folder)
        files = sorted(p for p in self._tree if not prefix or p.startswith(prefix + "/"))
        return FolderScan(files, [])

    def leads_elsewhere(self, folder: str) -> bool:
        return False

    def commit(
        self,
        message: str,
        committer: Committer,
        paths: tuple[str, ...] = (),
        signing_key: Path | None = None,
        author: Committer | None = None,
    ) -> str | None:
        """The work tree's commit; unsigned (the suite's GitTargets sign nothing); the author
        is not modelled (the suite's ClusterProviders have no attribution)."""
        assert signing_key is None, "the simulated remote does not sign"
        yield_point("commit")
        base = self.remote.tree(self._head)
        folders = [_key(p) for p in paths] or [""]
        new = {p: d for p, d in base.items() if not _under(p, folders)}
        new.update({p: d for p, d in self._tree.items() if _under(p, folders)})
        if new == base:
            return None
        self._head = self.remote.make(self._head, new, "ours", message)
        return self._head

    def versions(self, path: str, depth: int, within: int = 512) -> list[bytes]:
        """``Workspace.versions``: the file after each of the last ``depth`` commits of HEAD's
        first-parent history that changed it, among its last ``within`` commits, newest
        first. A local read, like ``read``: no point where the schedule switches."""
        key, changed, walked = _key(path), 0, 0
        found: list[bytes] = []
        cursor = self._head
        while cursor is not None and changed < depth and walked < within:
            walked += 1
            commit = self.remote.commits[cursor]
            before = self.remote.tree(commit.parent).get(key)
            if commit.tree.get(key) != before:
                changed += 1
                if key in commit.tree:
                    found.append(commit.tree[key])
            cursor = commit.parent
        return found

    def head(self) -> str:
        assert self._head is not None
        return self._head

    def push(self, expected: str | None) -> PushResult:
        yield_point("push")
        assert self._head is not None
        landed = self.remote.cas(expected, self._head, "ours")
        yield_point("push-answer")  # a crash here: the push landed, nobody heard it
        return PushResult(landed, "ok" if landed else "[rejected] (stale info)")


def _key(path: str) -> str:
    text = path.strip("/")
    return "" if text in ("", ".") else text.removeprefix("./")


def _under(path: str, folders: list[str]) -> bool:
    return any(not f or path == f or path.startswith(f + "/") for f in folders)
