"""Per-GitTarget health as the watcher reports it (issue 26 §2, §4): the ``gittarget_*``
series labelled by namespace and name, one set per GitTarget and gone with it; the Ready
message and a Normal Event saying what the last push carried.

The pushes and apply outcomes are recorded as the branch worker and the dispatcher record them
(``TargetHealth.record_pushes``, the ledger; their own tests: test_push_record.py,
test_ledger_recent.py); the watcher reads them each pass.
"""

from __future__ import annotations

import pytest

from shared.model.ids import Branch, GitTargetUid
from shared.store.target_health import Push, TargetHealth
from tests.integration.watcher.harness import GROUP, Rig, mirror_setup

pytestmark = pytest.mark.integration

IDS = {"namespace": "team-a", "name": "target"}
SHA = "3f2a1c9" + "0" * 33


def _gauge(rig: Rig, name: str) -> float | None:
    assert rig.registry is not None
    return rig.registry.get_sample_value(f"gitops_reverser_gittarget_{name}", IDS)


def test_a_git_target_has_its_series_message_and_event(rig: Rig, repo_url: str) -> None:
    uid = GitTargetUid(mirror_setup(rig, repo_url))
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    rig.burst()
    rig.burst()  # the rows are a pass's: this one sees what the first one's watches published

    assert (_gauge(rig, "ready"), _gauge(rig, "stalled")) == (1.0, 0.0)
    assert _gauge(rig, "last_push_timestamp_seconds") is None  # nothing pushed yet
    stream = rig.keys.branch_events(Branch(repo_url, "main").key)
    head = rig.redis.xrange(stream, count=1)[0][0]
    assert rig.last_metrics is not None
    (row,) = rig.last_metrics.gittargets._rows
    assert row.oldest_unpushed == int(str(head).split("-")[0]) / 1000
    ready = rig.cluster.conditions("GitTarget", "target", "team-a")["Ready"]
    assert ready["message"] == "mirroring into clusters/team-a on branch main; nothing pushed yet"

    # the branch worker pushed the writes: the entries are acknowledged and deleted (M8)
    rig.redis.delete(stream)
    TargetHealth(rig.redis, rig.keys).record_pushes({uid: Push(SHA, 3, 1234.5)})
    rig.clock.now += 60  # the next pass, a minute on (an Event is named by its time)
    rig.burst()
    assert _gauge(rig, "last_push_timestamp_seconds") == 1234.5
    assert _gauge(rig, "oldest_unpushed_write_seconds") == 0.0
    ready = rig.cluster.conditions("GitTarget", "target", "team-a")["Ready"]
    assert (ready["status"], ready["message"]) == ("True", "pushed 3f2a1c9: 3 objects")
    events = rig.cluster.resource("v1", "Event").get(namespace="team-a").to_dict()["items"]
    said = [(e["type"], e["message"]) for e in events if e["involvedObject"]["name"] == "target"]
    assert ("Normal", "pushed 3f2a1c9: 3 objects") in said

    rig.cluster.delete(GROUP, "GitTarget", "target", "team-a")
    rig.burst()
    assert _gauge(rig, "ready") is None  # its series went with it
