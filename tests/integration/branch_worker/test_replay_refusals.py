"""M7 with M10 (issue 23, finding 1): a replay onto a new tip never drops a write unseen.

Someone pushes to the folder just before the owner's push: the push is rejected (stale info),
the owner resets to the new tip and replays its writes there. Whatever the new tip makes of a
write (a ``.gittargetignore`` that hides it, a file that makes the folder unsupported), the
write is either made or refused as it would be on arrival: ``GitPathAccepted=False`` with the
reason, a Refusal owed to a consenting applier. Real Redis, a real bare repository, plain git.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from sandbox.githost.outside import push
from shared.model.config import ApplierRef
from shared.model.events import GitTargetRef
from shared.model.ids import GitTargetUid
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KEEP = "apps/team/configmaps/keep-one.yaml"
LATE = "apps/team/configmaps/late-one.yaml"
KS = ApplierRef("Kustomization", "flux-system", "apps", "default")


def test_an_ignore_pushed_just_before_the_push_refuses_the_write_visibly(rig: Rig) -> None:
    """The edit was written on the old tip; the pushed ``.gittargetignore`` hides it. The
    replay refuses it with ``IgnoreShadowsManagedPath`` (before the fix it vanished with
    ``GitPathAccepted`` still True), acknowledges its event, and the window's other write is
    still pushed, under a message that names only what the commit holds."""
    loop = rig.loop()
    rig.publish("keep-one", "CREATE")
    rig.drain(loop)
    loop.flush(force=True)
    rig.publish("keep-one", "UPDATE", {"k": "v2"})
    rig.publish("late-one", "CREATE")  # after: the refusal refuses the folder from here on
    rig.drain(loop)
    ignore = {"apps/.gittargetignore": "team/configmaps/late-*.yaml\n"}
    push(str(rig.bare), rig.tmp / "person", ignore, "ignore the late ones")
    rig.clock.now += 10
    loop.flush()  # rejected once (stale info), replayed on the new tip, pushed
    assert LATE not in rig.files()
    assert "v2" in rig.show(KEEP)
    assert rig.commits()[:2] == ["[UPDATE] v1/configmaps/keep-one", "ignore the late ones"]
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "IgnoreShadowsManagedPath"
    assert "late-one" in refusal["message"]
    assert rig.events.pending_count(rig.bk) == 0
    assert not loop.busy()


def test_a_window_whose_only_write_is_refused_on_replay_owes_its_refusal(rig: Rig) -> None:
    """A window of one write, refused on the new tip: nothing of it is committed, its refusal
    stands, and a consenting GitTarget's applier is owed a Refusal for it (A1, A5)."""
    rig.target = dataclasses.replace(rig.target, applier=KS, on_refusal="Reapply")
    rig.configs.publish_target(rig.target)
    loop = rig.loop()
    rig.publish("keep-one", "CREATE")
    rig.drain(loop)
    loop.flush(force=True)
    rig.publish("late-one", "CREATE")
    rig.drain(loop)
    push(str(rig.bare), rig.tmp / "person", {"apps/.gittargetignore": "*/*/late-*\n"}, "ignore")
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "ignore"
    assert LATE not in rig.files()
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "IgnoreShadowsManagedPath"
    owed = json.loads(str(rig.client.get(rig.keys.applier(KS.key)) or "{}"))
    assert owed.get("refusals") == [str(rig.target.uid)]
    assert rig.events.pending_count(rig.bk) == 0
    assert not loop.busy()


def test_a_file_that_makes_the_folder_unsupported_refuses_the_replayed_write(rig: Rig) -> None:
    """The same for any refusal the new tip brings: a script pushed into the folder makes it
    unsupported (UnsupportedContent), so the replayed write is refused, visibly."""
    loop = rig.loop()
    rig.publish("keep-one", "CREATE")
    rig.drain(loop)
    loop.flush(force=True)
    rig.publish("keep-one", "UPDATE", {"k": "v2"})
    rig.drain(loop)
    push(str(rig.bare), rig.tmp / "person", {"apps/run.sh": "echo hi\n"}, "a script")
    rig.clock.now += 10
    loop.flush()
    assert rig.commits()[0] == "a script"
    assert "v2" not in rig.show(KEEP)
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "UnsupportedContent"
    assert rig.events.pending_count(rig.bk) == 0


def test_an_open_window_refused_on_replay_is_closed_with_nothing_left(rig: Rig) -> None:
    """A second GitTarget's window is still open when the first one's push is rejected: its
    write, replayed on the new tip, is refused there too, and its window goes (nothing is
    left to commit), so the branch is quiet again (Q3)."""
    other = dataclasses.replace(rig.target, uid=GitTargetUid("gt-uid-2"), name="gt2", path="other")
    rig.configs.publish_target(other)
    loop = rig.loop()
    rig.publish("keep-one", "CREATE")
    rig.drain(loop)
    loop.flush(force=True)
    rig.publish("keep-one", "UPDATE", {"k": "v2"})
    rig.drain(loop)
    rig.clock.now += 4  # the first window is due at +5 (from its write), the other's later
    event = rig.event("late-one", "CREATE")
    event = dataclasses.replace(event, target=GitTargetRef(other.uid, "team", "gt2"))
    rig.events.publish(rig.bk, event)
    rig.drain(loop)
    push(str(rig.bare), rig.tmp / "person", {"other/run.sh": "echo\n"}, "a script elsewhere")
    rig.clock.now += 2
    loop.flush()  # only the first GitTarget's window is due
    assert "v2" in rig.show(KEEP)
    refusal = rig.configs.refusal(other.uid)
    assert refusal is not None and refusal["reason"] == "UnsupportedContent"
    assert rig.events.pending_count(rig.bk) == 0
    assert not loop.busy()
