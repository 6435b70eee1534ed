"""What one push did to one ref, read from the repository, ready for any provider's payload.

A push is detected by comparing the refs before and after ``git-receive-pack`` ran, so a ref
change here is exactly what the server accepted. The commit lists are the real ones (``git
log`` between the old and the new value); each provider then picks its own slice of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.githost import gitrepo
from sandbox.githost.gitrepo import ZERO_SHA, CommitInfo, Refs

# GitHub: "The array includes a maximum of 2048 commits" (push event, docs.github.com).
MAX_LISTED_COMMITS = 2048
# Gitea lists at most ten commits of a new branch (newCommit.CommitsBeforeLimit(10) in
# services/repository/push.go).
GITEA_NEW_BRANCH_COMMITS = 10


@dataclass(frozen=True, slots=True)
class RefChange:
    """One ref that moved: created (before is zeros), deleted (after is zeros) or updated."""

    ref: str
    before: str
    after: str

    @property
    def created(self) -> bool:
        return self.before == ZERO_SHA

    @property
    def deleted(self) -> bool:
        return self.after == ZERO_SHA

    @property
    def is_tag(self) -> bool:
        return self.ref.startswith("refs/tags/")

    @property
    def is_branch(self) -> bool:
        return self.ref.startswith("refs/heads/")

    @property
    def short_name(self) -> str:
        return self.ref.split("/", 2)[2] if self.is_tag or self.is_branch else self.ref

    @property
    def ref_type(self) -> str:
        return "tag" if self.is_tag else "branch"


@dataclass(frozen=True, slots=True)
class PushFacts:
    """Everything a payload says about one ref change, all read from git."""

    change: RefChange
    pusher: str
    pushed: tuple[CommitInfo, ...]  # new to this ref (and, when created, to the repo); newest first
    total: int  # len(pushed) without the listing cap
    recent: tuple[CommitInfo, ...]  # the last commits of a new ref, newest first (Gitea's list)
    head: CommitInfo | None  # the commit the ref now points at; None when deleted
    forced: bool  # an update that is not a fast-forward
    branch_changes: int  # how many branches the whole push moved


def diff_refs(before: Refs, after: Refs) -> list[RefChange]:
    """The refs a push created, updated or deleted, in ref-name order."""
    names = sorted(set(before) | set(after))
    changes = [RefChange(n, before.get(n, ZERO_SHA), after.get(n, ZERO_SHA)) for n in names]
    return [c for c in changes if c.before != c.after]


def collect(path: Path, change: RefChange, before: Refs, pusher: str, branches: int) -> PushFacts:
    """Read from the repository what the payloads need to say about ``change``."""
    if change.deleted:
        return PushFacts(change, pusher, (), 0, (), None, False, branches)
    exclude = _known_before(change, before)
    pushed = gitrepo.log(path, change.after, exclude, MAX_LISTED_COMMITS)
    total = len(pushed)
    if total == MAX_LISTED_COMMITS:
        total = gitrepo.count(path, change.after, exclude)
    recent: tuple[CommitInfo, ...] = ()
    if change.created:
        recent = tuple(gitrepo.log(path, change.after, (), GITEA_NEW_BRANCH_COMMITS))
    head = gitrepo.log(path, gitrepo.peel(path, change.after), (), 1)[0]
    forced = not change.created and not gitrepo.is_ancestor(
        path, gitrepo.peel(path, change.before), head.id
    )
    return PushFacts(change, pusher, tuple(pushed), total, recent, head, forced, branches)


def _known_before(change: RefChange, before: Refs) -> list[str]:
    """What the repository already had: the old value, or every other ref for a new one."""
    if not change.created:
        return [change.before]
    return sorted({sha for ref, sha in before.items() if ref != change.ref})
