"""W2: the watcher names the managers of each write by the watch's order.

The sandbox's API double keeps managedFields as the API server does (whole-second times,
one entry a manager). An edit and then the applier's write of the same object, in one
second, show the same newest entries; the watcher tells them apart by the entry that moved
since the write the watch delivered before, and says so in the event (``writers``).
"""

from __future__ import annotations

import pytest

from tests.integration.watcher.harness import Rig, mirror_setup

pytestmark = pytest.mark.integration


def test_each_event_names_the_managers_that_made_its_write(rig: Rig, repo_url: str) -> None:
    mirror_setup(rig, repo_url)
    c = rig.cluster
    c.configmap("team-a", "app", {"mode": "blue"})
    rig.burst()  # the watch now has a cursor; the next burst resumes from it
    configmaps = c.resource("v1", "ConfigMap")
    configmaps.patch(
        name="app",
        namespace="team-a",
        body={"data": {"mode": "green"}},
        content_type="application/merge-patch+json",
        field_manager="kubectl-edit",
    )
    configmaps.patch(
        name="app",
        namespace="team-a",
        body={"data": {"mode": "blue"}},
        content_type="application/merge-patch+json",
        field_manager="kustomize-controller",
    )
    rig.burst()
    events = rig.published(repo_url)
    assert [e.operation for e in events] == ["CREATE", "UPDATE", "UPDATE"]
    edit, revert = events[1], events[2]
    # each burst is a new watcher: the first write it delivers has no write before it in its
    # order (it knows no order across a restart), so nothing is named
    assert edit.writers is None
    # the revert is kept apart from the edit in the stream (a fact may withhold it, U1);
    # its newest entries are the two managers when both wrote in one second (a
    # tie), or the applier's alone when a second boundary fell between: either way the
    # watch's order names the applier as its writer
    assert revert.writers == ("kustomize-controller",)
    assert {m.manager for m in revert.managers} <= {"kubectl-edit", "kustomize-controller"}
