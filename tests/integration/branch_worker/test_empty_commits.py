"""``onRefusal: PushEmptyCommit`` in the branch worker (P11): real Redis and a real bare
repository, the clock driven by hand.

The refusal used is the folder's: someone else pushes a file the product does not manage into
the GitTarget's folder, so every later write there is refused (``UnsupportedContent``, M10)
while the files already written stay, which is the case an apply of the folder reverts.
"""

from __future__ import annotations

import dataclasses

import pytest

from sandbox.githost.outside import git
from services.branch_worker.branch import BranchLoop
from shared.decide.empty_commit import MIN_INTERVAL_S
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

CM = "apps/team/configmaps/app.yaml"


def _ask(rig: Rig, **changes: object) -> None:
    rig.target = dataclasses.replace(rig.target, on_refusal="PushEmptyCommit", **changes)  # type: ignore[arg-type]
    rig.configs.publish_target(rig.target)


def _unsupported(rig: Rig, loop: BranchLoop) -> str:
    """``app`` is written, then someone else puts a script into the folder and the owner
    follows the new tip (the steady tick's read)."""
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert CM in rig.files()
    other = rig.tmp / "other"
    git("clone", "-q", str(rig.bare), str(other))
    (other / "apps" / "deploy.sh").write_text("#!/bin/sh\n")
    git("add", "-A", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "script", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)
    loop.check_tip()
    return rig.head()


def _subjects(rig: Rig, since: str) -> list[str]:
    return git("log", "--format=%s", f"{since}..main", cwd=rig.bare).splitlines()


def _empty(rig: Rig, commit: str) -> bool:
    return git("diff-tree", "--no-commit-id", "--name-only", "-r", commit, cwd=rig.bare) == ""


def test_a_refused_edit_of_a_filed_object_pushes_one_empty_commit(rig: Rig) -> None:
    _ask(rig)
    loop = rig.loop()
    base = _unsupported(rig, loop)
    rig.publish("app", "UPDATE", {"k": "edited"})
    rig.publish("app", "UPDATE", {"k": "again"})
    rig.drain(loop)
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "UnsupportedContent"
    loop.flush()
    loop.apply_requests()
    assert _subjects(rig, base) == ["Apply again after refused edits: team/gt"]
    assert _empty(rig, rig.head())
    assert rig.states.read(rig.bk).observed_tip == rig.head(), "ours, not a foreign commit"

    rig.publish("app", "UPDATE", {"k": "third"})
    rig.drain(loop)
    rig.clock.now += 1
    loop.apply_requests()
    assert len(_subjects(rig, base)) == 1, "rate-limited"
    rig.clock.now += MIN_INTERVAL_S
    loop.apply_requests()
    assert len(_subjects(rig, base)) == 2


@pytest.mark.parametrize("case", ["suspended", "no-file", "none"])
def test_no_empty_commit_when_not_asked_or_not_filed(rig: Rig, case: str) -> None:
    """Never for a suspended GitTarget, nor for another onRefusal, nor when a refused object
    has no file in the folder (here a new ConfigMap, refused like the rest)."""
    if case == "suspended":
        _ask(rig, suspended=True)
    elif case == "no-file":
        _ask(rig)
    loop = rig.loop()
    base = _unsupported(rig, loop)
    rig.publish("new" if case == "no-file" else "app", "CREATE", {"k": "x"})
    rig.drain(loop)
    assert rig.configs.refusal(rig.target.uid) is not None
    loop.flush()
    rig.clock.now += 2 * MIN_INTERVAL_S
    loop.apply_requests()
    assert rig.head() == base


def test_the_reconcilers_revert_owes_no_further_empty_commit(rig: Rig) -> None:
    """W2's reasoning: after the empty commit the reconciler applies the folder, and its
    revert (the object as the file holds it) is refused like any write there, but changes no
    value: nothing more is owed, so a refusal never makes a commit every minute."""
    _ask(rig)
    loop = rig.loop()
    base = _unsupported(rig, loop)
    rig.publish("app", "UPDATE", {"k": "edited"})
    rig.drain(loop)
    loop.apply_requests()
    assert len(_subjects(rig, base)) == 1
    rig.publish("app", "UPDATE")  # back to what the file holds: {"k": "v"}
    rig.drain(loop)
    rig.clock.now += 2 * MIN_INTERVAL_S
    loop.apply_requests()
    assert len(_subjects(rig, base)) == 1


def test_an_outside_push_after_the_refusal_settles_it(rig: Rig) -> None:
    """Coalesced: a new tip moved the branch after the refusal, so no empty commit follows."""
    _ask(rig)
    loop = rig.loop()
    _unsupported(rig, loop)
    rig.publish("app", "UPDATE", {"k": "edited"})
    rig.drain(loop)
    moved = rig.foreign_push()
    loop.check_tip()
    loop.apply_requests()
    assert rig.head() == moved
