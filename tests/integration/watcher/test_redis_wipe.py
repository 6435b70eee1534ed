"""D2: a delete made while Redis was away, which came back empty, still reaches Git.

The whole path runs for real: the sandbox's API server, a watcher, a private redis-server that
the test kills (its data goes with it) and starts again empty, a branch worker and a Git host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from tests.integration.redis_server import RedisServer, redis_server
from tests.integration.watcher.harness import Cluster, Rig, mirror_everything, mirror_setup

pytestmark = pytest.mark.integration
__all__ = ["redis_server"]  # the fixture, imported for pytest

FOLDER = "clusters/team-a/team-a/configmaps"


def _files(githost: GitHost) -> list[str]:
    bare = githost.repo_path("team/config")
    listed = git("ls-tree", "--name-only", f"main:{FOLDER}", cwd=bare)
    return sorted(listed.split())


@pytest.mark.parametrize("mode", ["OnEvent", "Always", "Never"])
def test_a_delete_made_while_redis_was_away_reaches_git(
    cluster: Cluster,
    redis_server: RedisServer,
    *,
    githost: GitHost,
    repo_url: str,
    tmp_path: Path,
    mode: str,
) -> None:
    """Fails before D2: the watch relisted with no cursor and no seen set, published the
    objects still there and nothing about the one that went, so its file stayed in Git."""
    kept = mode == "Never"
    rig = Rig(cluster, redis_server.client(), "d2")
    mirror_setup(rig, repo_url, prune={"mode": mode})
    for name in ("keep", "gone"):
        rig.cluster.configmap("team-a", f"{mode.lower()}-{name}", {"v": "1"})
    rig.burst()
    mirror_everything(rig, repo_url, tmp_path / "first")
    keep, gone = f"{mode.lower()}-keep.yaml", f"{mode.lower()}-gone.yaml"
    assert {keep, gone} <= set(_files(githost))

    redis_server.stop()
    rig.cluster.delete("v1", "ConfigMap", f"{mode.lower()}-gone", "team-a")
    redis_server.start()  # back, and empty: no cursor, no seen set, no settings
    rig.redis = redis_server.client()
    rig.clock.now += 60  # the watcher restarts later than its WatchRule became Ready
    rig.burst()  # the watcher publishes the configs again (C8) and lists without a cursor
    listings = [sorted(x.names) for x in rig.listings(repo_url)]
    mirror_everything(rig, repo_url, tmp_path / "second")

    files = _files(githost)
    assert keep in files
    assert (gone in files) is kept
    assert listings == ([] if kept else [[f"{mode.lower()}-keep"]]), "Never needs no listing"


def test_a_new_watch_under_on_event_removes_no_document_the_cluster_lacks(
    cluster: Cluster,
    redis_server: RedisServer,
    *,
    githost: GitHost,
    repo_url: str,
    tmp_path: Path,
) -> None:
    """M9: OnEvent mirrors observed deletes only. A new watch's first list (its WatchRule not
    Ready before the watcher started) finds a document for an object the cluster lacks: that is
    no delete anyone observed, so no listing goes out and the document stays."""
    stray = f"{FOLDER}/stray.yaml"
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n  namespace: team-a\n"
    work = tmp_path / "seed"
    git("clone", "-q", repo_url, str(work), cwd=tmp_path)
    (work / FOLDER).mkdir(parents=True, exist_ok=True)
    (work / stray).write_text(body)
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "by hand", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    rig = Rig(cluster, redis_server.client(), "d2new")
    mirror_setup(rig, repo_url, prune={"mode": "OnEvent"})
    rig.cluster.configmap("team-a", "fresh", {"v": "1"})
    rig.burst()
    assert rig.listings(repo_url) == []
    mirror_everything(rig, repo_url, tmp_path / "first")
    assert {"fresh.yaml", "stray.yaml"} <= set(_files(githost))
