"""The branch loop signs a GitTarget's commits with its key, and never commits them unsigned.

Real Redis, a real bare repository, real git and ssh-keygen; the key comes from a signer that
stands in for the Secret read (``SecretSigner`` against the sandbox API is in
``tests/integration/watcher/test_signing.py``). Signatures are checked with
``git verify-commit`` and an allowed-signers file (P6); a key that cannot be used holds that
GitTarget's writes, unacknowledged and uncommitted, with ``SigningKeyInvalid`` until it works
again, while the branch's other GitTargets go on (T4, M8).
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox.githost.outside import git
from services.branch_worker.holds import SIGNING_RETRY_S
from services.branch_worker.signing import SIGNING_KEY_INVALID, SigningUnavailable
from shared.git.errors import GitTemporary
from shared.git.signing import SigningKey, generate_key, key_file
from shared.model.config import TargetConfig
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from tests.configs import DEFAULT_COMMITTER, target_config
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

CM = "apps/team/configmaps/app.yaml"


class FakeSigner:
    """A Signer whose key (or failure) the test sets; it counts the key files it handed out
    and the Secret reads it stands for (one a call for a GitTarget that signs)."""

    def __init__(self, key: SigningKey | None = None) -> None:
        self.key = key
        self.failure: SigningUnavailable | None = None
        self.files: list[Path] = []
        self.reads = 0

    @contextmanager
    def __call__(self, target: TargetConfig) -> Iterator[Path | None]:
        if not target.signing_secret:
            yield None
            return
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        assert self.key is not None
        with key_file(self.key) as path:
            self.files.append(path)
            yield path


def verified(rig: Rig, rev: str, key: SigningKey) -> bool:
    allowed = rig.tmp / "allowed_signers"
    allowed.write_text(key.allowed_signer(DEFAULT_COMMITTER.email))
    done = subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", rev],
        cwd=rig.bare,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def signed_target(rig: Rig) -> None:
    rig.target = dataclasses.replace(rig.target, signing_secret="signing")
    rig.configs.publish_target(rig.target)


def test_a_signed_targets_commit_verifies(rig: Rig) -> None:
    """P6: the window's commit is signed with the GitTarget's key; the key file is gone."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    loop = rig.loop(signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    loop.flush(force=True)
    assert rig.show(CM).startswith("apiVersion: v1")
    assert verified(rig, "main", key)
    assert not verified(rig, "main", generate_key("another"))
    assert signer.files and not any(p.exists() for p in signer.files)


def test_a_replayed_commit_is_signed_again(rig: Rig) -> None:
    """M7 with P6: a push refused because the remote moved is replayed on the new tip, and
    the replayed commit carries a signature of its own."""
    signed_target(rig)
    key = generate_key("team/gt")
    loop = rig.loop(signer=FakeSigner(key))
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    foreign = rig.foreign_push()
    loop.flush(force=True)
    assert git("rev-parse", "main~1", cwd=rig.bare).strip() == foreign
    assert verified(rig, "main", key)


def _broken(signer: FakeSigner) -> None:
    signer.failure = SigningUnavailable("Secret team/signing: no key", permanent=True)


def test_a_key_that_cannot_be_used_holds_the_targets_writes_until_it_works(rig: Rig) -> None:
    """P6, T4, M8: the key breaks after the watcher's check; the window's edit is neither
    committed unsigned nor dropped: nothing is pushed, its event stays pending in the stream,
    the GitTarget shows SigningKeyInvalid. A later edit joins the hold. Once the key works
    again (asked every SIGNING_RETRY_S), every held edit is committed, signed, and pushed,
    with the key the retry read (the Secret is read once, not again for the commit)."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    loop = rig.loop(signer=signer)
    before = rig.head()
    _broken(signer)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    loop.flush(force=True)
    assert rig.head() == before
    assert rig.events.pending_count(rig.bk) == 1
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == SIGNING_KEY_INVALID
    assert loop.busy() and not loop.retrying() and loop.held() == [rig.target.uid]
    assert loop.next_deadline() == rig.clock.now + SIGNING_RETRY_S

    rig.publish("other", "CREATE", {"b": "1"})  # a later edit of the held GitTarget
    rig.drain(loop)
    rig.clock.now += SIGNING_RETRY_S
    loop.flush(force=True)  # asked again: still broken
    assert rig.head() == before
    assert rig.events.pending_count(rig.bk) == 2

    signer.failure = None  # the Secret is fixed
    loop.flush()  # not due yet: the key is not asked for before SIGNING_RETRY_S
    assert rig.head() == before
    rig.clock.now += SIGNING_RETRY_S
    reads = signer.reads
    loop.flush()
    assert signer.reads == reads + 1  # the retry's probe read signs the commit: one read
    assert not any(path.exists() for path in signer.files)
    assert "a: '1'" in rig.show(CM)
    assert "b: '1'" in rig.show("apps/team/configmaps/other.yaml")
    assert verified(rig, "main", key)
    assert git("rev-parse", "main~1", cwd=rig.bare).strip() == before  # one signed commit
    assert rig.events.pending_count(rig.bk) == 0
    assert not loop.busy()
    assert "signing" not in rig.configs.refusals(rig.target.uid)


def test_held_writes_are_pending_for_the_next_owner(rig: Rig) -> None:
    """M8 with P6: an owner that goes away while holding a GitTarget's writes leaves their
    events pending; the next owner claims them and, its key working, pushes them signed."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    _broken(signer)
    dead = rig.loop("dead", signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(dead, "dead")
    dead.flush(force=True)
    assert dead.held() == [rig.target.uid]
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # the dead worker's lease expires
    heir = rig.loop("heir", signer=FakeSigner(key))  # start() claims the held events
    heir.flush(force=True)
    assert "a: '1'" in rig.show(CM)
    assert verified(rig, "main", key)
    assert rig.events.pending_count(rig.bk) == 0


def test_a_replay_while_held_keeps_the_held_writes(rig: Rig) -> None:
    """M7 with P6: a push of another GitTarget refused because the remote moved is replayed
    on the new tip; the held GitTarget's writes survive the reset, still uncommitted, and are
    pushed signed once its key works."""
    signed_target(rig)
    other = _other_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    _broken(signer)
    loop = rig.loop(signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    _publish_theirs(rig, other)
    rig.drain(loop)
    foreign = rig.foreign_push()
    loop.flush(force=True)
    assert "other/team/configmaps/theirs.yaml" in rig.files()
    assert git("rev-parse", "main~1", cwd=rig.bare).strip() == foreign
    assert CM not in rig.files()
    assert loop.held() == [rig.target.uid]
    signer.failure = None
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert "a: '1'" in rig.show(CM)
    assert verified(rig, "main", key)
    assert rig.events.pending_count(rig.bk) == 0


def test_a_target_whose_folder_holds_a_held_one_is_held_with_it(rig: Rig) -> None:
    """P6: a GitTarget of the same branch whose folder holds the held GitTarget's folder
    (here the repository root) is held too, since a commit of its folder would take the held
    writes unsigned; it shows why, and both are pushed once the key works."""
    signed_target(rig)
    root = target_config(GitTargetUid("gt-uid-2"), "team", "root", str(rig.bare), "main", path="")
    rig.configs.publish_target(root)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    _broken(signer)
    loop = rig.loop(signer=signer)
    before = rig.head()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    loop.flush(force=True)
    _publish_theirs(rig, root)
    rig.drain(loop)
    loop.flush(force=True)
    assert rig.head() == before
    assert loop.held() == sorted([rig.target.uid, root.uid])
    refusal = rig.configs.refusal(root.uid)
    assert refusal is not None and refusal["reason"] == SIGNING_KEY_INVALID
    assert "team/gt" in refusal["message"]
    signer.failure = None
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert "a: '1'" in rig.show(CM)
    assert "team/configmaps/theirs.yaml" in rig.files()
    assert rig.events.pending_count(rig.bk) == 0
    assert rig.configs.refusal(root.uid) is None


def test_a_key_the_api_could_not_give_fails_the_pass_and_keeps_the_events(rig: Rig) -> None:
    """A Secret that could not be read now (the API is down) is retried: the pass fails as
    any git failure does (the branch starts over), and no event is acknowledged (M8)."""
    signed_target(rig)
    signer = FakeSigner()
    signer.failure = SigningUnavailable("Secret team/signing could not be read", permanent=False)
    loop = rig.loop(signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    with pytest.raises(GitTemporary):
        loop.flush(force=True)
    assert rig.events.pending_count(rig.bk) == 1
    assert rig.configs.refusal(rig.target.uid) is None


def _other_target(rig: Rig) -> TargetConfig:
    other = target_config(
        GitTargetUid("gt-uid-2"), "team", "other", str(rig.bare), "main", path="other"
    )
    rig.configs.publish_target(other)
    return other


def _publish_theirs(rig: Rig, other: TargetConfig) -> None:
    rig.events.publish(
        rig.bk,
        ObjectEvent(
            target=GitTargetRef(other.uid, "team", other.name),
            operation="CREATE",
            object_id=ObjectId("", "v1", "configmaps", "ConfigMap", "team", "theirs"),
            uid="uid-theirs",
            resource_version="1",
            body={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "theirs", "namespace": "team"},
                "data": {"b": "1"},
            },
            managers=(),
            observed_at=rig.clock.now,
        ),
    )


def test_another_target_of_the_branch_is_committed_unsigned_meanwhile(rig: Rig) -> None:
    """T4: one GitTarget's bad key holds that GitTarget only: another GitTarget of the same
    branch, in another folder, is committed and pushed meanwhile, its events acknowledged."""
    signed_target(rig)
    other = _other_target(rig)
    signer = FakeSigner()
    _broken(signer)
    loop = rig.loop(signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    _publish_theirs(rig, other)
    rig.drain(loop)
    loop.flush(force=True)
    assert "other/team/configmaps/theirs.yaml" in rig.files()
    assert CM not in rig.files()
    assert rig.configs.refusal(other.uid) is None
    assert rig.events.pending_count(rig.bk) == 1  # the held GitTarget's edit alone
    assert loop.held() == [rig.target.uid]


def _not_served(rig: Rig, how: str) -> None:
    """The watcher stops serving the GitTarget for its key: it publishes it ``key_held``
    (still registered with its branch), or, as a watcher before that mark did, withdraws it
    (its settings go, its refusals stay)."""
    if how == "key_held":
        rig.configs.publish_target(dataclasses.replace(rig.target, key_held=True))
        assert rig.configs.has_targets(rig.bk) and rig.configs.targets_of(rig.bk) == []
    else:
        assert rig.configs.withdraw_target(rig.target.uid)


@pytest.mark.parametrize("how", ["key_held", "withdrawn"])
def test_held_writes_survive_the_watcher_withdrawing_the_target(rig: Rig, how: str) -> None:
    """P6, M8: the watcher stops serving a GitTarget whose key it finds unusable. Its held
    writes are not taken for those of a deleted GitTarget: they stay held and pending (also
    when the key works again before the watcher serves it), and once it is served again with
    a working key they are pushed signed. A deleted GitTarget's held writes go with it."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    _broken(signer)
    loop = rig.loop(signer=signer)
    before = rig.head()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    loop.flush(force=True)
    _not_served(rig, how)
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert rig.head() == before
    assert loop.held() == [rig.target.uid]
    assert rig.events.pending_count(rig.bk) == 1

    signer.failure = None
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()  # the key works, but the GitTarget is not served yet: still held
    assert rig.head() == before
    assert loop.held() == [rig.target.uid]
    rig.configs.publish_target(rig.target)  # served again: the Secret is fixed
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert "a: '1'" in rig.show(CM)
    assert verified(rig, "main", key)
    assert rig.events.pending_count(rig.bk) == 0

    _broken(signer)
    rig.publish("app", "UPDATE", {"a": "2"})
    rig.drain(loop)
    loop.flush(force=True)
    rig.configs.forget_target(rig.target)  # deleted: its refusal goes too
    rig.clock.now += SIGNING_RETRY_S
    loop.flush()
    assert not loop.busy()
    assert rig.events.pending_count(rig.bk) == 0
    assert "a: '1'" in rig.show(CM)


@pytest.mark.parametrize("how", ["key_held", "withdrawn"])
def test_a_new_owner_parks_the_events_of_a_target_withdrawn_for_its_key(rig: Rig, how: str) -> None:
    """M8 with P6: a new owner that claims events of a GitTarget not served for its key
    (published ``key_held``; or, from an older watcher, no settings and its ``signing``
    refusal standing) keeps them pending, applied once the GitTarget is served again, and
    pushes them signed."""
    signed_target(rig)
    key = generate_key("team/gt")
    signer = FakeSigner(key)
    _broken(signer)
    dead = rig.loop("dead", signer=signer)
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(dead, "dead")
    dead.flush(force=True)
    _not_served(rig, how)
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # the dead worker's lease expires
    before = rig.head()
    heir = rig.loop("heir", signer=FakeSigner(key))  # start() claims and applies them
    heir.flush()
    assert rig.head() == before
    assert heir.busy() and heir.holding()
    assert rig.events.pending_count(rig.bk) == 1

    rig.configs.publish_target(rig.target)
    rig.clock.now += SIGNING_RETRY_S
    heir.flush()  # the parked events go back in the backlog
    heir.handle([])
    heir.flush(force=True)
    assert "a: '1'" in rig.show(CM)
    assert verified(rig, "main", key)
    assert rig.events.pending_count(rig.bk) == 0
    assert not heir.busy()
