"""M6: the longest a window stays open is the process setting GITOPS_REVERSER_MAX_WINDOW,
however often writes keep restarting the rolling commit window."""

from __future__ import annotations

import dataclasses

import pytest

from shared.settings import Settings
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("environ", "closes_at"),
    [
        ({}, 1_007.0),  # the default 60s cap is far away: the rolling 4s window decides
        ({"GITOPS_REVERSER_MAX_WINDOW": "5s"}, 1_005.0),  # opened at 1000, capped at +5s
    ],
)
def test_the_max_window_setting_moves_when_the_window_closes(
    rig: Rig, environ: dict[str, str], closes_at: float
) -> None:
    rig.settings = Settings.from_env(environ)
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=4.0)
    loop = rig.loop()
    rig.publish("app", "CREATE", {"a": "1"})
    rig.drain(loop)  # opens the window at 1000
    rig.clock.now += 3.0
    rig.publish("app", "UPDATE", {"a": "2"})
    rig.drain(loop)  # restarts the rolling window at 1003
    assert loop.next_deadline() == closes_at
    rig.clock.now = closes_at - 0.1
    loop.flush()
    assert rig.commits() == ["seed"], "still open just before it closes"
    rig.clock.now = closes_at
    loop.flush()
    assert rig.commits() == ["GitOps Reverser on gt: 2 resource(s)", "seed"]
