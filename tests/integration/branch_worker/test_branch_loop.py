"""The branch loop against real Redis and a real bare repository (M3-M8, M10, Q2-Q3)."""

from __future__ import annotations

import dataclasses

import pytest

from services.branch_worker.backlog import SLICE
from tests.integration.branch_worker.conftest import Rig, git

pytestmark = pytest.mark.integration

CM = "apps/team/configmaps/app.yaml"


def test_create_update_delete_become_commits_with_expected_bytes(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    loop.flush()
    assert rig.show(CM) == (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team\n"
        "data:\n  a: '1'"
    )
    rig.publish("app", "UPDATE", {"a": "2"})
    rig.drain(loop)
    loop.flush()
    assert "a: '2'" in rig.show(CM)
    rig.publish("app", "DELETE")
    rig.drain(loop)
    loop.flush()
    assert CM not in rig.files()
    assert rig.commits()[:3] == [
        "[DELETE] v1/configmaps/app",
        "[UPDATE] v1/configmaps/app",
        "[CREATE] v1/configmaps/app",
    ]
    assert rig.events.pending_count(rig.bk) == 0


def test_an_update_that_changes_nothing_makes_no_commit(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    before = rig.commits()
    rig.publish("app", "UPDATE", {"a": "1"})
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == before
    assert not loop.busy()
    assert rig.events.pending_count(rig.bk) == 0


def test_a_burst_inside_one_window_is_one_commit(rig: Rig) -> None:
    loop = rig.loop()
    for i in range(200):
        rig.publish(f"cm-{i:03d}", "CREATE", {"i": str(i)})
        if i % 50 == 0:
            rig.drain(loop)
            rig.clock.now += 1  # writes keep arriving inside the rolling window
            loop.flush()
    rig.drain(loop)
    assert rig.states.read(rig.bk).windows_open == 1
    assert rig.states.read(rig.bk).pending == {"w1": 200}
    rig.clock.now += 5
    loop.flush()
    assert rig.commits() == ["GitOps Reverser on gt: 200 resource(s)", "seed"]
    assert len([f for f in rig.files() if f.startswith("apps/team/")]) == 200
    state = rig.states.read(rig.bk)
    assert state.pending_total == 0 and state.windows_open == 0 and not state.push_in_flight


def test_zero_commit_window_makes_a_commit_per_write(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop()
    for i in range(3):
        rig.publish(f"cm-{i}", "CREATE")
    rig.drain(loop)
    loop.flush()
    assert len(rig.commits()) == 4


def test_a_foreign_push_before_ours_is_replayed_never_forced(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)
    other = rig.tmp / "other"
    git("clone", "-q", str(rig.bare), str(other))
    (other / "notes.md").write_text("someone else\n")
    git("add", "-A", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "foreign", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == ["[CREATE] v1/configmaps/app", "foreign", "seed"]
    assert {"notes.md", CM} <= set(rig.files())
    assert rig.states.read(rig.bk).observed_tip == git("rev-parse", "main", cwd=rig.bare)


def test_the_api_value_wins_over_a_git_side_edit(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1", "b": "2"})
    rig.drain(loop)
    loop.flush()
    other = rig.tmp / "other"
    git("clone", "-q", str(rig.bare), str(other))
    (other / CM).write_text((other / CM).read_text() + "  extra: git-only\n")
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qam", "git edit", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)
    rig.publish("app", "UPDATE", {"a": "9"})
    rig.drain(loop)
    loop.flush()
    text = rig.show(CM)
    assert "a: '9'" in text and "extra" not in text and "b:" not in text


def test_a_dead_owner_leaves_events_for_the_next_owner_exactly_once(rig: Rig) -> None:
    dead = rig.loop("dead")
    rig.publish("app", "CREATE", {"a": "1"})
    rig.publish("two", "CREATE", {"a": "2"})
    rig.drain(dead, "dead")
    assert dead.busy()
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # the dead worker's lease expires
    heir = rig.loop("heir")
    rig.clock.now += 10
    heir.flush()
    assert rig.commits() == ["GitOps Reverser on gt: 2 resource(s)", "seed"]
    assert rig.events.pending_count(rig.bk) == 0


def test_a_claimed_backlog_is_applied_a_slice_per_wake_in_stream_order(rig: Rig) -> None:
    """Q1, M8: what a new owner claims is applied at most ``SLICE`` events per ``handle``, so
    its wakes (and lease renewals) keep going; the backlog counts as busy and due at once,
    and an object edited on both sides of a slice boundary ends with its last value."""
    dead = rig.loop("dead")
    for i in range(SLICE + 10):
        rig.publish(f"cm-{i:04d}", "CREATE", {"i": str(i)})
    rig.publish("cm-0000", "UPDATE", {"i": "last"})  # applied in the second slice
    rig.drain(dead, "dead")
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # the dead worker's lease expires

    heir = rig.loop("heir")  # start() claims everything and applies the first slice only
    assert heir.busy()
    assert heir.next_deadline() == rig.clock.now
    heir.handle([])
    rig.clock.now += 10
    heir.flush()
    assert rig.commits() == [f"GitOps Reverser on gt: {SLICE + 11} resource(s)", "seed"]
    assert "i: last" in rig.show("apps/team/configmaps/cm-0000.yaml")
    assert rig.events.pending_count(rig.bk) == 0


def test_pushed_but_unacknowledged_events_make_no_second_commit(rig: Rig) -> None:
    dead = rig.loop("dead")
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(dead, "dead")
    rig.clock.now += 10
    dead._commits.commit(dead.open_windows.pop(rig.target.uid))  # committed, pushed, not acked
    dead.ws.push(dead.tip)
    rig.client.delete(rig.keys.branch_lease(rig.bk))
    heir = rig.loop("heir")
    heir.flush()
    assert rig.commits() == ["[CREATE] v1/configmaps/app", "seed"]
    assert rig.events.pending_count(rig.bk) == 0


def test_a_secret_is_refused_and_nothing_is_written(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("creds", "CREATE", kind="Secret", sensitive=True)
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == ["seed"]
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "SensitiveResource"
    rig.publish("creds", "DELETE", kind="Secret", sensitive=True)
    rig.drain(loop)
    assert rig.configs.refusal(rig.target.uid) is None


def test_an_unknown_file_refuses_the_folder(rig: Rig) -> None:
    other = rig.tmp / "other"
    git("clone", "-q", str(rig.bare), str(other))
    (other / "apps").mkdir()
    (other / "apps" / "deploy.sh").write_text("#!/bin/sh\n")
    git("add", "-A", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "script", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert CM not in rig.files()
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal == {
        "reason": "UnsupportedContent",
        "message": "apps/deploy.sh is not managed by gitops-reverser",
    }


def test_events_of_a_deleted_gittarget_are_dropped(rig: Rig) -> None:
    loop = rig.loop()
    rig.configs.forget_target(rig.target)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert rig.commits() == ["seed"]
    assert rig.events.pending_count(rig.bk) == 0


def test_a_write_restarts_the_quiet_period(rig: Rig) -> None:
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)
    assert rig.states.read(rig.bk).last_write_at == rig.clock.now
    rig.clock.now += 3
    rig.publish("app", "UPDATE", {"k": "w"})
    rig.drain(loop)
    assert rig.states.read(rig.bk).last_write_at == rig.clock.now


def test_a_healthy_branch_keeps_every_event_and_a_stalled_one_only_the_newest(rig: Rig) -> None:
    """M6 and U1 together: with ``commitWindow: 0s`` each write is its own commit, so a branch
    that pushes keeps every event of an object edited back to back; once the branch is recorded
    stalled, its stream is compacted to each object's newest event and stays so."""
    for i in range(3):
        rig.publish("cm-a", "UPDATE", {"i": str(i)})
    rig.publish("cm-b", "CREATE", {"i": "0"})
    assert rig.client.xlen(rig.keys.branch_events(rig.bk)) == 4
    rig.client.sadd(rig.keys.stalled_branches, rig.bk)  # as BranchHealth.stalled records it
    assert rig.events.compact(rig.bk) == 2
    rig.publish("cm-a", "UPDATE", {"i": "3"})
    rig.events.ensure_group(rig.bk)
    newest = rig.events.read(rig.bk, "w1", 100, None)
    assert [(e.event.object_id.name, e.event.body["data"]["i"]) for e in newest if e.event] == [
        ("cm-b", "0"),
        ("cm-a", "3"),
    ]
