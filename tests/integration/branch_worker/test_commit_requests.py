"""CommitRequests on the branch loop, against real Redis and a real bare repository (P6).

A request binds to its GitTarget's open window, closes it at receipt + closeDelaySeconds on
the injected clock with its message, and its outcome (with the SHA on the remote, after any
replay) is recorded before its entry is acknowledged; it is processed once by uid.
"""

from __future__ import annotations

import dataclasses

import pytest

from services.branch_worker.branch import BranchLoop
from services.branch_worker.commit_requests import RequestDesk
from services.branch_worker.holds import SIGNING_RETRY_S
from services.branch_worker.signing import Signer, SigningUnavailable, unsigned
from shared.decide.commit_requests import FINALIZE_BOUND_S
from shared.git.signing import generate_key
from shared.model.commit_requests import (
    ALREADY_PRESENT,
    COMMITTED,
    FINALIZE_FAILED,
    NO_WINDOW,
    WAITING,
    CommitRequestItem,
    Outcome,
)
from shared.model.events import GitTargetRef
from shared.store.branch_state import FencedOff
from shared.store.commit_requests import CommitRequests
from shared.store.leases import Leases
from tests.integration.branch_worker.conftest import Rig, git
from tests.integration.branch_worker.test_signed_commits import FakeSigner, signed_target, verified

pytestmark = pytest.mark.integration


def _store(rig: Rig) -> CommitRequests:
    return CommitRequests(rig.client, rig.keys, 3600)


def _loop(rig: Rig, worker: str = "w1", signer: Signer = unsigned) -> BranchLoop:
    desk = RequestDesk(_store(rig), rig.branch.branch, rig.clock)
    return rig.loop(worker, requests=desk, signer=signer)


def _request(rig: Rig, uid: str = "cr-1", message: str = "save: release 1", delay: int = 0) -> None:
    item = CommitRequestItem(
        target=GitTargetRef(rig.target.uid, "team", "gt"),
        uid=uid,
        namespace="team",
        name=uid,
        message=message,
        close_delay_s=delay,
    )
    rig.events.publish(rig.bk, item)


def _outcome(rig: Rig, uid: str = "cr-1") -> Outcome:
    found = _store(rig).outcome(uid)
    assert found is not None
    return found


@pytest.fixture
def long_rig(rig: Rig) -> Rig:
    """A GitProvider whose commitWindow (30 s) would keep the window open much longer."""
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=30.0)
    rig.configs.publish_branch(rig.branch)
    return rig


def test_a_request_closes_the_window_now_with_its_message(long_rig: Rig) -> None:
    """P6: closeDelaySeconds 0 closes the open window at the next flush, the request's message
    replaces the template's, and status.sha is the remote's commit."""
    rig = long_rig
    loop = _loop(rig)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    rig.clock.now += 1
    loop.flush()
    assert rig.commits() == ["seed"], "the 30 s window is still open"
    _request(rig, message="save: release 1\n\nwhy it was saved")
    rig.drain(loop)
    loop.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    body = git("log", "-1", "--format=%B", "main", cwd=rig.bare).strip()
    assert body == "save: release 1\n\nwhy it was saved"
    outcome = _outcome(rig)
    assert (outcome.reason, outcome.sha, outcome.branch) == (COMMITTED, rig.head(), "main")
    assert rig.events.pending_count(rig.bk) == 0


def test_a_close_delay_keeps_collecting_edits_until_its_deadline(long_rig: Rig) -> None:
    """P6: the window closes at receipt + closeDelaySeconds (injected clock), holding the
    edits made meanwhile; until then the outcome is WaitingForCloseDelay with the deadline."""
    rig = long_rig
    loop = _loop(rig)
    rig.publish("one", "CREATE")
    rig.drain(loop)
    received = rig.clock.now = rig.clock.now + 1
    _request(rig, delay=3)
    rig.drain(loop)
    assert _outcome(rig).reason == WAITING
    assert _outcome(rig).deadline == received + 3
    assert loop.next_deadline() == received + 3
    rig.clock.now = received + 2
    rig.publish("two", "CREATE")
    rig.drain(loop)
    rig.clock.now = received + 2.9
    loop.flush()
    assert rig.commits() == ["seed"]
    rig.clock.now = received + 3
    loop.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    assert {"apps/team/configmaps/one.yaml", "apps/team/configmaps/two.yaml"} <= set(rig.files())
    assert _outcome(rig).reason == COMMITTED


def test_no_open_window_is_benign_and_acknowledged(long_rig: Rig) -> None:
    """P6: a request for a GitTarget with no open window binds to nothing: NoWindowInGrace,
    no commit, its entry acknowledged at once."""
    rig = long_rig
    loop = _loop(rig)
    _request(rig)
    rig.drain(loop)
    loop.flush()
    assert _outcome(rig).reason == NO_WINDOW
    assert rig.commits() == ["seed"]
    assert rig.events.pending_count(rig.bk) == 0
    assert not loop.busy()


def test_a_request_is_processed_once(long_rig: Rig) -> None:
    """P6: the same request received again (published twice, say) after its outcome changes
    nothing: no second binding, the outcome stays the first one."""
    rig = long_rig
    loop = _loop(rig)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    _request(rig)
    _request(rig)  # a duplicate while bound
    rig.drain(loop)
    loop.flush()
    first = _outcome(rig)
    rig.clock.now += 5
    rig.publish("app", "UPDATE", {"k": "2"})  # a new window is open
    _request(rig)
    rig.drain(loop)
    rig.clock.now += 40
    loop.flush()
    assert _outcome(rig) == first
    assert rig.commits() == ["[UPDATE] v1/configmaps/app", "save: release 1", "seed"]
    assert rig.events.pending_count(rig.bk) == 0


def test_status_sha_is_the_commit_after_a_replay(long_rig: Rig) -> None:
    """P6, M7: the branch moved under the window; the push is refused, the window replayed on
    the new tip, and the outcome names the replayed commit (the one on the remote), not the
    first local one."""
    rig = long_rig
    loop = _loop(rig)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    _request(rig)
    rig.drain(loop)
    foreign = rig.foreign_push()
    loop.flush()
    assert rig.commits() == ["save: release 1", "foreign notes.md", "seed"]
    outcome = _outcome(rig)
    assert outcome.sha == rig.head()
    parent = git("rev-parse", f"{outcome.sha}^", cwd=rig.bare).strip()
    assert parent == foreign


def test_a_new_owner_finishes_a_bound_request(long_rig: Rig) -> None:
    """P6, M8: an owner that died with the request bound leaves its entry (and the window's
    events) unacknowledged; the next owner claims both, binds the request again and commits
    with its message."""
    rig = long_rig
    dead = _loop(rig, "dead")
    rig.publish("app", "CREATE")
    rig.drain(dead, "dead")
    _request(rig, delay=60)
    rig.drain(dead, "dead")
    assert _outcome(rig).reason == WAITING
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # the dead worker's lease expires
    heir = _loop(rig, "heir")
    heir.handle([])  # the claimed backlog, as the heir's next wake applies it
    rig.clock.now += 60
    heir.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    assert _outcome(rig).reason == COMMITTED
    assert _outcome(rig).sha == rig.head()
    assert rig.events.pending_count(rig.bk) == 0


def test_pushed_before_the_outcome_was_recorded_is_already_present(long_rig: Rig) -> None:
    """P6: the owner pushed the window and died before recording the outcome; the next owner
    finds nothing to write and reports AlreadyPresent with the tip that holds it."""
    rig = long_rig
    dead = _loop(rig, "dead")
    rig.publish("app", "CREATE")
    rig.drain(dead, "dead")
    _request(rig)
    rig.drain(dead, "dead")
    dead.requests = None  # dies between its push and the outcome
    dead._commits.commit(dead.open_windows.pop(rig.target.uid))
    dead.ws.push(dead.tip)
    rig.client.delete(rig.keys.branch_lease(rig.bk))
    heir = _loop(rig, "heir")
    heir.handle([])
    heir.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    outcome = _outcome(rig)
    assert (outcome.reason, outcome.sha) == (ALREADY_PRESENT, rig.head())
    assert rig.events.pending_count(rig.bk) == 0


DECLINE = "#!/bin/sh\necho 'pushes to main are closed' >&2\nexit 1\n"


def _decline_pushes(rig: Rig, decline: bool = True) -> None:
    """The remote refuses every push (a host's branch protection) until told otherwise."""
    hook = rig.bare / "hooks" / "pre-receive"
    if decline:
        hook.write_text(DECLINE)
        hook.chmod(0o755)
    else:
        hook.unlink()


def test_finalize_failed_while_pushes_are_refused_then_lifted(long_rig: Rig) -> None:
    """P6: the remote refuses the window's push; past its deadline plus FINALIZE_BOUND_S
    (injected clock) the request is FinalizeFailed (not WaitingForCloseDelay for ever), and
    it stays bound: the push that lands once the remote accepts reports it Committed."""
    rig = long_rig
    loop = _loop(rig)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    received = rig.clock.now
    _request(rig, delay=2)
    rig.drain(loop)
    _decline_pushes(rig)
    rig.clock.now = received + 2
    loop.flush()
    assert loop.stalled
    assert _outcome(rig).reason == WAITING
    assert loop.next_deadline() == received + 2 + FINALIZE_BOUND_S
    rig.clock.now = received + 2 + FINALIZE_BOUND_S - 0.1
    loop.flush()
    assert _outcome(rig).reason == WAITING, "not before the bound"
    rig.clock.now = received + 2 + FINALIZE_BOUND_S
    loop.flush()
    failed = _outcome(rig)
    assert failed.reason == FINALIZE_FAILED
    assert "pre-receive hook declined" in failed.message
    assert rig.commits() == ["seed"]
    assert rig.events.pending_count(rig.bk) == 2, "the edit and the request stay pending"

    _decline_pushes(rig, decline=False)
    rig.clock.now += 5
    loop.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    lifted = _outcome(rig)
    assert (lifted.reason, lifted.sha) == (COMMITTED, rig.head())
    assert rig.events.pending_count(rig.bk) == 0


def test_a_new_owner_keeps_the_first_deadline(long_rig: Rig) -> None:
    """P6: a branch that fails and starts over re-binds its requests; the deadline stays the
    first receipt's, so a branch that keeps failing still reports FinalizeFailed."""
    rig = long_rig
    dead = _loop(rig, "dead")
    rig.publish("app", "CREATE")
    rig.drain(dead, "dead")
    received = rig.clock.now
    _request(rig, delay=5)
    rig.drain(dead, "dead")
    rig.client.delete(rig.keys.branch_lease(rig.bk))
    rig.clock.now = received + 4
    heir = _loop(rig, "heir")
    heir.handle([])
    assert _outcome(rig).deadline == received + 5
    assert heir.next_deadline() == received + 5


def test_a_stale_owners_outcome_is_refused(long_rig: Rig) -> None:
    """Q1, P6: an owner whose lease lapsed (another took the branch) cannot record an
    outcome: its write is fenced off and the request's record is untouched."""
    rig = long_rig
    stale = _loop(rig, "stale")
    rig.publish("app", "CREATE")
    rig.drain(stale, "stale")
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # its lease lapsed
    heir = _loop(rig, "heir")
    heir.handle([])
    _request(rig)
    with pytest.raises(FencedOff):
        rig.drain(stale, "stale")  # the stale owner reads the request first
    assert _store(rig).outcome("cr-1") is None


def test_outcome_writes_are_fenced_by_the_lease_token(long_rig: Rig) -> None:
    """Q1, P6: the store refuses an outcome written with a token that is no longer the
    branch's newest, keeps a final outcome over WaitingForCloseDelay, and lets a final one
    replace FinalizeFailed."""
    rig = long_rig
    store = _store(rig)
    leases = Leases(rig.client, rig.keys, 60_000)
    old = leases.acquire(rig.bk, "old")
    assert old is not None
    store.record(old, "cr-9", Outcome(WAITING, deadline=5.0))
    rig.client.delete(rig.keys.branch_lease(rig.bk))
    new = leases.acquire(rig.bk, "new")
    assert new is not None and new.token > old.token
    with pytest.raises(FencedOff):
        store.record(old, "cr-9", Outcome(COMMITTED, branch="main", sha="1" * 40))
    assert store.outcome("cr-9") == Outcome(WAITING, deadline=5.0)
    store.record(new, "cr-9", Outcome(FINALIZE_FAILED, "refused", deadline=5.0))
    store.record(new, "cr-9", Outcome(WAITING, deadline=9.0))
    assert store.outcome("cr-9") == Outcome(FINALIZE_FAILED, "refused", deadline=5.0)
    store.record(new, "cr-9", Outcome(COMMITTED, branch="main", sha="2" * 40))
    found = store.outcome("cr-9")
    assert found is not None and (found.reason, found.sha) == (COMMITTED, "2" * 40)


def test_a_window_held_for_its_signing_key_keeps_its_requests(rig: Rig) -> None:
    """P6, T4: the bound window's commit cannot be signed, so the window is held, and with it
    the request (also while the watcher withdraws the GitTarget for its key): past the bound
    it is FinalizeFailed for the key; once the key works the window is committed, signed,
    with the request's message, and the request Committed with that commit."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    loop = _loop(rig, signer=signer)
    signer.failure = SigningUnavailable("Secret team/signing: no key", permanent=True)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    _request(rig)
    rig.drain(loop)
    loop.flush()
    assert loop.held() == [rig.target.uid]
    assert _outcome(rig).reason == WAITING
    assert rig.configs.withdraw_target(rig.target.uid)  # the watcher stops serving it
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert loop.held() == [rig.target.uid]
    rig.clock.now += FINALIZE_BOUND_S
    loop.flush()
    failed = _outcome(rig)
    assert failed.reason == FINALIZE_FAILED
    assert "SigningKeyInvalid" in failed.message

    signer.failure = None
    rig.configs.publish_target(rig.target)  # served again: the Secret is fixed
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert rig.commits() == ["save: release 1", "seed"]
    assert verified(rig, "main", key)
    outcome = _outcome(rig)
    assert (outcome.reason, outcome.sha) == (COMMITTED, rig.head())
    assert rig.events.pending_count(rig.bk) == 0
