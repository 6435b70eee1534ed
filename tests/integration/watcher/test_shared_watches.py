"""Issue 29: the watcher's threads and watch connections grow with the resource types its rules
select, not with the namespaces; a type it may not watch cluster-wide falls back to a bounded
number of watches per namespace. M1 holds through the shared watch: each (GitTarget, type,
namespace) lists, then follows, resumes from its cursor, and lists again when that is lost.

Before, every (GitTarget, type, namespace) watch was a thread and a watch connection of its own:
at 5,000 GitTargets the watcher ran 5,002 threads, nearly all runnable, and the machine's load
average went past 5,000 (docs/benchmarks.md, issue 29's scale table).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.watcher import app
from shared.model.ids import GitTargetUid
from tests.helpers import wait_until
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    mirror_everything,
    mirror_setup,
    watch_rule,
)

pytestmark = pytest.mark.integration

NAMESPACES = 200
#: Threads the watcher may add to the process, whatever the namespaces: the shared watch's two,
#: the reconcile loop and the light status loop, the applier checks' pool, the API double's
#: request threads (one per open connection, the watch's too) and slack for one still closing.
FIXED_THREADS = 24
#: How long the set-up of 200 tenants and their first events may take on a busy machine.
SETUP_S = 300.0


def _tenants(rig: Rig, url: str, namespaces: list[str]) -> None:
    """One GitProvider (the same repository and branch: no Secret, so one writer), GitTarget,
    WatchRule on ConfigMaps and ConfigMap ``app`` in each namespace."""
    c = rig.cluster
    for ns in namespaces:
        c.namespace(ns)
        c.create(git_provider(ns, url))
        c.create(git_target(ns))
        c.create(watch_rule(ns, CONFIGMAPS))
        c.configmap(ns, "app", {"v": "1"})


def _published(rig: Rig, url: str, operation: str) -> set[str]:
    """The namespaces whose ConfigMap ``app`` the watcher published with ``operation``."""
    return {
        e.object_id.namespace
        for e in rig.published(url)
        if e.operation == operation and e.object_id.name == "app"
    }


def test_many_namespaces_share_one_watch_and_every_edit_is_mirrored(
    rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    """200 GitTargets in 200 namespaces: one shared watch (two threads) and one watch
    connection feed them all (one type: ConfigMaps), and an edit in each namespace reaches
    Git."""
    namespaces = [f"team-{i:03d}" for i in range(NAMESPACES)]
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    _tenants(rig, repo_url, namespaces)
    before = threading.active_count()
    watcher = rig.watcher(burst=False)
    runner = threading.Thread(target=watcher.run, name="watcher-under-test", daemon=True)
    runner.start()
    try:
        wait_until(
            lambda: _published(rig, repo_url, "CREATE") == set(namespaces),
            SETUP_S,
            "every namespace's ConfigMap published",
            poll=0.5,
        )
        for ns in namespaces:
            rig.cluster.patch("v1", "ConfigMap", "app", ns, {"data": {"v": "2"}})
        wait_until(
            lambda: _published(rig, repo_url, "UPDATE") == set(namespaces),
            SETUP_S,
            "every namespace's edit published",
            poll=0.5,
        )
        assert watcher.feeders() == 1
        watches = rig.cluster.server.open_watches()
        assert watches.get(("", "configmaps"), 0) <= 2, watches  # one, and one still closing
        assert sum(watches.values()) <= 3, watches
        assert threading.active_count() - before <= FIXED_THREADS
    finally:
        watcher.request_stop()
        runner.join(timeout=60)
        watcher.close()

    mirror_everything(rig, repo_url, tmp_path / "work")
    bare = githost.repo_path("team/config")
    for ns in (namespaces[0], namespaces[NAMESPACES // 2], namespaces[-1]):
        text = git("show", f"main:clusters/{ns}/{ns}/configmaps/app.yaml", cwd=bare)
        assert "v: '2'" in text or 'v: "2"' in text, text
    tree = git("ls-tree", "-r", "--name-only", "main", "clusters", cwd=bare).split()
    manifests = sorted(p for p in tree if p.endswith(".yaml"))
    assert manifests == sorted(f"clusters/{ns}/{ns}/configmaps/app.yaml" for ns in namespaces)


FENCED = ("team-a", "team-b", "team-c")


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[KubeApiServer]:
    """A remote cluster whose token may read ConfigMaps in three namespaces only, each by its
    own name: a cluster-wide list or watch of them is forbidden there."""
    rule = AccessRule("alice", ("get", "list", "watch"), ("",), ("configmaps",), FENCED)
    server = KubeApiServer(all_crd_files(), tokens={"alice-token": "alice"}, rules=[rule])
    namespace = {"apiVersion": "v1", "kind": "Namespace"}
    server.preload(("", "namespaces"), [{**namespace, "metadata": {"name": n}} for n in FENCED])
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": "1"}}
    server.preload(
        ("", "configmaps"),
        [{**configmap, "metadata": {"name": "app", "namespace": n}} for n in FENCED],
    )
    server.start()
    yield server
    server.stop()


def _remote(rig: Rig, server: KubeApiServer, tmp_path: Path) -> None:
    """ClusterProvider ``remote``: the guarded cluster, through alice's token."""
    path = tmp_path / "remote.kubeconfig"
    server.write_kubeconfig(path, token="alice-token")
    rig.cluster.namespace("gitops-reverser")
    rig.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "remote-kubeconfig", "namespace": "gitops-reverser"},
            "data": {"config": base64.b64encode(path.read_bytes()).decode()},
        }
    )
    ref = {"secretRef": {"name": "remote-kubeconfig", "key": "config"}}
    rig.cluster.create(cluster_provider("remote", kubeConfig=ref, accessFrom={"selector": {}}))


def test_a_type_forbidden_cluster_wide_falls_back_to_bounded_namespace_watches(
    rig: Rig,
    guarded: KubeApiServer,
    repo_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The remote cluster forbids the cluster-wide watch of ConfigMaps: each namespace gets a
    watch of its own, at most ``namespace_watches`` (2) at once; the third waits, with a
    warning, and runs once a slot is free. Every namespace is mirrored."""
    _remote(rig, guarded, tmp_path)
    rig.settings_overrides["namespace_watches"] = 2
    for ns in FENCED:
        rig.cluster.namespace(ns)
        rig.cluster.create(git_provider(ns, repo_url))
        rig.cluster.create(git_target(ns, clusterProviderRef={"name": "remote"}))
        rig.cluster.create(watch_rule(ns, CONFIGMAPS))

    with caplog.at_level("WARNING"):
        rig.burst()

    assert _published(rig, repo_url, "CREATE") == set(FENCED)
    assert any("cannot be watched cluster-wide" in r.getMessage() for r in caplog.records)
    waited = [r for r in caplog.records if "namespace watches run already" in r.getMessage()]
    assert len(waited) == 1


def test_a_running_shared_watch_lists_again_when_redis_lost_a_cursor(
    rig: Rig, repo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D2 while running: at its next session a shared watch reads its channels' cursors; one
    Redis lost is listed again as ``lostcursor`` (and publishes the names it found), as a watch
    of its own did at its next session."""
    monkeypatch.setattr(app, "SESSION_S", 1)  # sessions of a second: the next one comes soon
    uid = mirror_setup(rig, repo_url)
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    watcher = rig.watcher(burst=False)
    runner = threading.Thread(target=watcher.run, name="watcher-under-test", daemon=True)
    runner.start()
    try:
        wait_until(lambda: _published(rig, repo_url, "CREATE") == {"team-a"}, 60, "the CREATE")
        assert rig.metric("gitops_reverser_watcher_relists_total", cause="lostcursor") == 0
        rig.redis.delete(rig.keys.watch_cursor(GitTargetUid(uid), "/configmaps", "team-a"))
        wait_until(
            lambda: rig.metric("gitops_reverser_watcher_relists_total", cause="lostcursor") == 1,
            60,
            "the list after the lost cursor",
        )
        wait_until(lambda: len(rig.listings(repo_url)) == 1, 60, "the names it found")
    finally:
        watcher.request_stop()
        runner.join(timeout=60)
        watcher.close()
    assert rig.listings(repo_url)[0].names == frozenset({"app"})


def test_a_gittarget_created_while_the_shared_watch_streams_is_mirrored_at_once(
    rig: Rig, repo_url: str
) -> None:
    """A join cuts the open stream (its socket shut down, whatever moment the cut comes), so a
    new namespace's list and events come within a reconcile pass, not at the stream's next
    bookmark (60 s) or the end of its session (300 s)."""
    rig.cluster.create(cluster_provider(accessFrom={"selector": {}}))
    _tenants(rig, repo_url, ["team-a"])
    watcher = rig.watcher(burst=False)
    runner = threading.Thread(target=watcher.run, name="watcher-under-test", daemon=True)
    runner.start()
    try:
        wait_until(lambda: _published(rig, repo_url, "CREATE") == {"team-a"}, 60, "team-a")
        wait_until(
            lambda: rig.cluster.server.open_watches().get(("", "configmaps"), 0) == 1,
            60,
            "the shared watch's stream open",
        )
        _tenants(rig, repo_url, ["team-b"])
        wait_until(
            lambda: _published(rig, repo_url, "CREATE") == {"team-a", "team-b"},
            40,  # the reconcile period (10 s) and the list; less than a bookmark's 60 s
            "team-b",
        )
    finally:
        watcher.request_stop()
        runner.join(timeout=60)
        watcher.close()
