"""What a push carried, recorded per GitTarget for its Ready message, Events and metrics
(issue 26): the pushed commit and how many distinct objects it wrote; real Redis and git."""

from __future__ import annotations

from services.branch_worker.branch import BranchLoop
from shared.store.target_health import TargetHealth
from tests.integration.branch_worker.conftest import Rig


def _record(rig: Rig) -> dict[str, object]:
    health = TargetHealth(rig.client, rig.keys)
    seen = health.observe([(rig.target.uid, rig.bk)])[rig.target.uid]
    assert seen.pushed is not None
    return {"sha": seen.pushed.sha, "objects": seen.pushed.objects, "at": seen.pushed.at}


def test_a_push_records_its_commit_and_object_count(rig: Rig) -> None:
    loop: BranchLoop = rig.loop()
    for name in ("a", "b", "c"):
        rig.publish(name, "CREATE")
    rig.publish("a", "UPDATE", {"k": "v2"})  # the same object again: still three objects
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()

    assert _record(rig) == {"sha": rig.head(), "objects": 3, "at": rig.clock.now}
    health = TargetHealth(rig.client, rig.keys)
    seen = health.observe([(rig.target.uid, rig.bk)])[rig.target.uid]
    assert seen.pushed is not None
    assert seen.pushed.message == f"pushed {rig.head()[:7]}: 3 objects"
    assert seen.oldest_unpushed is None  # every entry acknowledged with the push (M8)


def test_a_write_waiting_for_its_window_is_the_oldest_unpushed(rig: Rig) -> None:
    loop: BranchLoop = rig.loop()
    rig.publish("a", "CREATE")
    first = rig.client.xrange(rig.keys.branch_events(rig.bk), count=1)[0][0]
    rig.drain(loop)  # written, its window still open: not pushed
    health = TargetHealth(rig.client, rig.keys)
    seen = health.observe([(rig.target.uid, rig.bk)])[rig.target.uid]
    assert seen.pushed is None
    assert seen.oldest_unpushed == int(str(first).split("-")[0]) / 1000
