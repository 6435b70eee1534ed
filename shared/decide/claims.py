"""Which GitProvider writes a branch when several name it (T1).

A branch (normalised repository URL + branch name) is one unit of quietness, but its commits
are made and pushed with one *writer*: a Secret, a committer, message templates and a commit
window (``BranchConfig.writer``). One GitProvider *holds* the branch and sets its writer; the
GitTargets of other GitProviders with the same writer (no Secret at all, or the same Secret of
the same namespace, and the same committer and templates) write it too, and those of any other
GitProvider are refused (``Validated=False``, ``BranchHeldByAnotherProvider``) and write
nothing: no tenant ever pushes with another tenant's credentials or commits under another
tenant's committer or templates.

Who holds it, in this order:

1. a GitProvider with access of its own (no permanent problem: its Secret exists and the
   repository accepted it) before one without: a GitProvider that has no access writes nothing,
   and cannot take a branch from one that has;
2. the GitProvider that holds it now (as published), so a newcomer never takes a branch over;
3. then by namespace and name, so the choice is the same on every pass and every restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shared.model.ids import BranchKey

BRANCH_HELD = "BranchHeldByAnotherProvider"

ProviderKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A GitProvider with at least one valid GitTarget on the branch."""

    branch: BranchKey
    provider: ProviderKey
    writer: str  # ``BranchConfig.writer`` of this GitProvider on this branch
    has_access: bool  # no permanent problem (Secret found, credentials not refused)


def writers(
    candidates: Iterable[Candidate], current: Mapping[BranchKey, ProviderKey]
) -> dict[BranchKey, str]:
    """The writer of each branch: its holder's (``current``: the holder as published now)."""
    best: dict[BranchKey, tuple[bool, bool, ProviderKey, str]] = {}
    for c in candidates:
        rank = (not c.has_access, current.get(c.branch) != c.provider, c.provider, c.writer)
        if c.branch not in best or rank < best[c.branch]:
            best[c.branch] = rank
    return {bk: rank[3] for bk, rank in best.items()}


def held_message(branch: str, url: str) -> str:
    """The refusal's message; it names no other tenant's objects."""
    return (
        f"branch {branch!r} of {url} is written by another GitProvider with other credentials, "
        "committer or templates; a branch has one writer (docs/crds.md)"
    )
