"""T4: a branch that cannot push shows on its GitTargets, as ``kubectl get gittargets`` shows
them, within a reconcile pass; and stops showing once a push lands.

The whole path runs: the watcher (``--burst`` passes) over the sandbox's Kubernetes API, a
branch worker over the same Redis, and a repository on the sandbox's Git host whose
``pre-receive`` hook declines every push (as a host's branch protection does) until the test
removes it. The table is asked for as kubectl asks for it (``Accept: as=Table``) and read
through the GitTarget CRD's printer columns (Ready, Reason), which the sandbox serves as the
API server does for a custom resource (sandbox/kube/tables.py: NAME, then the version's
additionalPrinterColumns; apiextensions tableconvertor.go).
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.ids import Branch
from shared.model.times import rfc3339
from shared.settings import Settings
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    watch_rule,
)

pytestmark = pytest.mark.integration

REPO = "team/protected"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def protected(githost: GitHost) -> Iterator[tuple[str, Path]]:
    """A repository on the Git host whose pre-receive hook declines every push."""
    url = githost.create_repo(REPO, files={"README.md": b"protected\n"})
    hook = githost.repo_path(REPO) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected: pushes are closed' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    yield url, hook


def _worker(rig: Rig, tmp_path: Path) -> BranchWorker:
    settings = Settings(key_prefix=rig.prefix, work_dir=str(tmp_path / "work"))
    return BranchWorker(settings, Stores.build(rig.redis, settings), "w1", rig.clock)


def _passes(worker: BranchWorker) -> None:
    """Take the branch if it is not taken, then run one pass over it."""
    for _ in range(2):
        worker.wake()
        worker.settle()


def _table(rig: Rig, ns: str) -> dict[str, dict[str, Any]]:
    """``kubectl get gittargets -n ns`` as the API server answers it: name -> cells."""
    server = rig.cluster.server
    pool = server.api_client().rest_client.pool_manager
    path = f"/apis/gitopsreverser.io/v1alpha1/namespaces/{ns}/gittargets"
    response = pool.request("GET", server.url + path, headers={"Accept": TABLE})
    assert response.status == 200, response.data
    table = json.loads(response.data)
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    return {
        row["object"]["metadata"]["name"]: dict(zip(names, row["cells"], strict=True))
        for row in table["rows"]
    }


def test_a_stalled_branch_shows_on_its_gittarget_until_a_push_lands(
    rig: Rig, tmp_path: Path, protected: tuple[str, Path]
) -> None:
    """Fails with the watcher before T4 (services/watcher/reconcile.py and targets.py as of
    948f031^, checked): the GitTarget stayed Ready=True Succeeded while every push of its
    branch was declined."""
    url, hook = protected
    c = rig.cluster
    c.namespace("team-a")
    c.create(cluster_provider(accessFrom={"names": ["team-a"]}))
    c.create(git_provider("team-a", url, push={"commitWindow": "0s"}))  # push at each pass
    c.create(git_target("team-a"))
    c.create(watch_rule("team-a", CONFIGMAPS))
    c.configmap("team-a", "settings", {"mode": "on"})
    rig.burst()
    assert c.conditions("GitTarget", "target", "team-a")["Ready"]["status"] == "True"
    worker = _worker(rig, tmp_path)
    try:
        stalled_at = rig.clock.now
        _passes(worker)  # the write is committed; every push of it is declined
        rig.clock.now += 5.0
        rig.burst()
        ready = c.conditions("GitTarget", "target", "team-a")["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "PushFailing")
        assert ready["message"].startswith(f"since {rfc3339(stalled_at)}: push refused"), ready
        assert "pre-receive hook declined" in ready["message"], ready["message"]
        row = _table(rig, "team-a")["target"]
        assert (row["Ready"], row["Reason"]) == ("False", "PushFailing"), row

        hook.unlink()  # the host accepts again
        rig.clock.now += worker.settings.steady_tick.total_seconds()  # the next pass is due
        _passes(worker)
        rig.burst()
    finally:
        worker.shutdown()
    ready = c.conditions("GitTarget", "target", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Succeeded"), ready
    assert (_table(rig, "team-a")["target"]["Reason"]) == "Succeeded"
    files = git("ls-tree", "-r", "--name-only", "main", cwd=hook.parent.parent)
    assert "clusters/team-a/team-a/configmaps/settings.yaml" in files.split(), files
    assert Branch(url, "main").key not in worker.stores.health.stalls()
