"""C3 (reliability probe), Q1, T4: a Git host that accepts connections and never answers stalls
only its own branch. Its fetch is killed at the workspace's deadline and the branch is given
back with its event unacknowledged (nothing lost), while another branch's write, on a healthy
host, is pushed meanwhile.

Failed before the fix: the hung fetch never returned (no deadline), so the host's branch stayed
stuck on its thread for ever and ``closed`` was never set.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from services.branch_worker.worker import BranchWorker
from shared.git.workspace import Workspace
from shared.model.ids import GitTargetUid
from tests.configs import branch_config, target_config
from tests.helpers import wait_until
from tests.integration.branch_worker.site import DEADLINE_S, Running, Site, settings_for
from tests.integration.git.hung_host import HungHost

pytestmark = pytest.mark.integration

#: The deadline of one fetch or push in this test (the product's is NETWORK_TIMEOUT_S).
TIMEOUT_S = 2.0


@pytest.fixture
def host() -> Iterator[HungHost]:
    hung = HungHost()
    yield hung
    hung.close()


def _bounded(directory: Path, url: str, branch: str, env: dict[str, str]) -> Workspace:
    return Workspace(directory, url, branch, env=env, timeout=TIMEOUT_S)


def test_a_hung_host_stalls_only_its_own_branch(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str, host: HungHost
) -> None:
    site = Site(tmp_path, redis_client, key_prefix, settings_for(tmp_path, key_prefix))
    healthy = site.branch("healthy")
    uid = GitTargetUid("gt-hung")
    hung = site.stores.configs.publish_served(
        branch_config(host.url("hung"), "main", "team", "gp-hung", commit_window_s=0.0),
        [target_config(uid, "team", "gt", host.url("hung"), "main", path="apps")],
    )
    site.repos["hung"] = (hung, uid)
    site.edit("hung", "stuck")
    worker = BranchWorker(site.settings, site.stores, "w", time.time, workspaces=_bounded)
    with Running(worker):
        wait_until(lambda: host.accepted >= 1, DEADLINE_S, "the hung host's fetch to connect")
        site.edit("healthy", "fine")
        wait_until(lambda: site.pushed("healthy") != [], DEADLINE_S, "the healthy branch's push")
        assert host.closed.wait(DEADLINE_S), "the hung fetch was never given up"
        assert site.stores.events.pending_count(hung) == 1  # not acknowledged: not lost
    assert site.pushed("healthy") == ["[CREATE] v1/configmaps/fine"]
    assert site.stores.events.pending_count(healthy) == 0
