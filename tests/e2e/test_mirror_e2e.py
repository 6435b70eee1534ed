"""API edits become commits with every process running (issue 3: M1-M7, M10).

One system runs for the module (steady tick 1s, reconcile 1s, lease 3s); each test makes its
own tenant (namespace, repository, GitProvider, GitTarget, WatchRule), edits objects through
the official client as a user would, and reads the result from the Git host's bare repository.
Expected bytes are written out by hand: they are what a reviewer reads in Git (M2: apiVersion,
kind, metadata first, 2-space indent, no status or server metadata).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.conftest import (
    CONFIGMAPS,
    WAIT_S,
    Launcher,
    Tenant,
    Tenants,
    start_process,
    stop_process,
)
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

COMMITTER = "GitOps Reverser <noreply@gitopsreverser.io>"
FLUX_SOURCE = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
GITREPOSITORIES: dict[str, Any] = {
    "apiGroups": ["source.toolkit.fluxcd.io"],
    "resources": ["gitrepositories"],
}
SECRETS: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"]}
BURST = 200
#: ``commitWindow: 0s``, a commit per write: tests that are not about windows wait for none.
PER_WRITE = "0s"


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(steady_tick="1s", reconcile_period="1s", lease_period="3s")


def _configmap(name: str, data: dict[str, str], **meta: Any) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, **meta), data=data)


def _version(cm: client.V1ConfigMap) -> str:
    assert cm.metadata is not None and cm.metadata.resource_version is not None
    return cm.metadata.resource_version


def _cm_path(t: Tenant, name: str) -> str:
    """M4: ``{path}/{namespace}/{resource}/{name}.yaml``, no group for the core group."""
    return f"{t.path}/{t.namespace}/configmaps/{name}.yaml"


def _cm_yaml(t: Tenant, name: str, data: str, labels: str = "") -> str:
    head = (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {t.namespace}\n"
    )
    return head + labels + "data:\n" + data


def _wait_file(t: Tenant, path: str, text: str) -> None:
    wait_until(lambda: path in t.files() and t.show(path) == text.rstrip("\n"), WAIT_S, path)


def test_configmap_create_update_delete_become_commits(tenants: Tenants) -> None:
    """M2, M4, M6, M9 (OnEvent): each edit is one commit by the configured committer, at the
    canonical path, with stable sanitised bytes (bookkeeping annotations dropped); a delete
    removes the file."""
    t = tenants.make("mirror-cm", rules=[CONFIGMAPS], commit_window=PER_WRITE)
    path = _cm_path(t, "app")
    base = t.tip()
    t.system.core.create_namespaced_config_map(
        t.namespace,
        _configmap(
            "app",
            {"mode": "fast", "b": "2"},
            labels={"team": "a"},
            annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        ),
    )
    created = t.wait_tip_moved(base)
    assert t.changed(created) == sorted([path, *t.bootstrap_paths()]), "P4: the first write"
    assert t.show(path) == _cm_yaml(t, "app", "  b: '2'\n  mode: fast", "  labels:\n    team: a\n")
    assert t.git("log", "-1", "--format=%cn <%ce>", created) == COMMITTER

    t.system.core.patch_namespaced_config_map("app", t.namespace, {"data": {"mode": "slow"}})
    updated = t.wait_tip_moved(created)
    assert t.changed_objects(updated) == [path]
    assert "mode: slow" in t.show(path)

    t.system.core.delete_namespaced_config_map("app", t.namespace)
    deleted = t.wait_tip_moved(updated)
    assert t.changed_objects(deleted) == [path]
    assert path not in t.files()
    assert t.commits_since(base) == [created, updated, deleted]


def test_custom_resource_create_update_delete_become_commits(tenants: Tenants) -> None:
    """M2, M4, M9: a Flux GitRepository (a custom resource) is mirrored under its group's
    folder, with the spec the API server defaulted and without the status Flux writes."""
    t = tenants.make("mirror-cr", rules=[GITREPOSITORIES], commit_window=PER_WRITE)
    group, version, plural = FLUX_SOURCE
    path = f"{t.path}/{t.namespace}/{group}/{plural}/src.yaml"
    body = {
        "apiVersion": f"{group}/{version}",
        "kind": "GitRepository",
        "metadata": {"name": "src", "namespace": t.namespace},
        "spec": {"url": t.url, "interval": "24h", "ref": {"branch": "main"}},
    }
    base = t.tip()
    t.system.custom.create_namespaced_custom_object(group, version, t.namespace, plural, body)
    created = t.wait_tip_moved(base)
    expected = (
        f"apiVersion: {group}/{version}\nkind: GitRepository\nmetadata:\n  name: src\n"
        f"  namespace: {t.namespace}\nspec:\n  interval: 24h\n  ref:\n    branch: main\n"
        f"  timeout: 60s\n  url: {t.url}"
    )
    assert t.show(path) == expected
    patch = {"spec": {"interval": "48h"}}
    t.system.custom.patch_namespaced_custom_object(
        group, version, t.namespace, plural, "src", patch
    )
    updated = t.wait_tip_moved(created)
    assert t.show(path) == expected.replace("24h", "48h")
    t.system.custom.delete_namespaced_custom_object(group, version, t.namespace, plural, "src")
    t.wait_tip_moved(updated)
    assert path not in t.files()
    assert all(len(t.changed_objects(c)) == 1 for c in t.commits_since(base))


def test_update_that_changes_nothing_makes_no_commit(tenants: Tenants) -> None:
    """M3: an update whose sanitised bytes equal Git's (only kubectl and Flux bookkeeping
    changed) makes no commit; a later real edit's commit touches only its own file."""
    t = tenants.make("mirror-noop", rules=[CONFIGMAPS], commit_window=PER_WRITE)
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _configmap("same", {"k": "v"}))
    _wait_file(t, _cm_path(t, "same"), _cm_yaml(t, "same", "  k: v"))
    before = t.tip()
    rv = _version(core.read_namespaced_config_map("same", t.namespace))
    bookkeeping = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"x":1}'},
            "labels": {"kustomize.toolkit.fluxcd.io/name": "apps"},
        }
    }
    patched = core.patch_namespaced_config_map("same", t.namespace, bookkeeping)
    assert _version(patched) != rv  # a real update: the watcher gets an event for it
    core.create_namespaced_config_map(t.namespace, _configmap("later", {"k": "v"}))
    t.wait_tip_moved(before)
    commits = t.commits_since(before)
    assert len(commits) == 1
    assert t.changed_objects(commits[0]) == [_cm_path(t, "later")]
    assert t.show(_cm_path(t, "same")) == _cm_yaml(t, "same", "  k: v")


def test_object_edited_on_both_sides_ends_as_the_api_object(tenants: Tenants) -> None:
    """M5, M7: someone pushes a change to the file (a value, an extra key, a label), then the
    API edits the object: the branch ends with the whole API object, the outside commit kept
    in history (compare-and-swap, never forced)."""
    t = tenants.make("mirror-both", rules=[CONFIGMAPS], commit_window=PER_WRITE)
    path = _cm_path(t, "both")
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _configmap("both", {"k": "one"}))
    _wait_file(t, path, _cm_yaml(t, "both", "  k: one"))
    git_side = _cm_yaml(t, "both", "  k: from-git\n  only-in-git: x\n", "  labels:\n    g: x\n")
    outside = t.system.push(t.repo, {path: git_side, "notes.md": "kept\n"})
    core.patch_namespaced_config_map("both", t.namespace, {"data": {"k": "from-api"}})
    _wait_file(t, path, _cm_yaml(t, "both", "  k: from-api"))
    t.git("merge-base", "--is-ancestor", outside, "main")  # raises unless outside is kept
    assert t.show("notes.md") == "kept"


def test_burst_of_200_edits_in_one_window_is_one_commit(tenants: Tenants) -> None:
    """M6: 200 ConfigMaps created inside one rolling commitWindow (3s) are one commit."""
    t = tenants.make("mirror-burst", rules=[CONFIGMAPS], commit_window="3s")
    t.wait_owned()
    base = t.tip()
    for i in range(BURST):
        t.system.core.create_namespaced_config_map(t.namespace, _configmap(f"c{i:03d}", {"i": "x"}))
    t.wait_tip_moved(base)
    commits = t.commits_since(base)
    assert len(commits) == 1
    assert len(t.changed_objects(commits[0])) == BURST
    assert (
        t.git("log", "-1", "--format=%s", commits[0])
        == f"GitOps Reverser on gt: {BURST} resource(s)"
    )


def test_commit_window_0s_makes_one_commit_per_edit(tenants: Tenants) -> None:
    """M6: with ``commitWindow: 0s`` each write is its own commit, even when the edits come
    back to back (no wait between them), in the order they were made."""
    t = tenants.make("mirror-zero", rules=[CONFIGMAPS], commit_window="0s")
    t.wait_owned()
    t.wait_watching("/configmaps")  # else the list may fold b's create and delete into nothing
    base = t.tip()
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _configmap("a", {"n": "1"}))
    core.create_namespaced_config_map(t.namespace, _configmap("b", {"n": "1"}))
    core.patch_namespaced_config_map("a", t.namespace, {"data": {"n": "2"}})
    core.delete_namespaced_config_map("b", t.namespace)
    wait_until(lambda: len(t.commits_since(base)) >= 4, WAIT_S, "four commits")
    commits = t.commits_since(base)
    assert [t.changed_objects(c) for c in commits] == [
        [_cm_path(t, n)] for n in ("a", "b", "a", "b")
    ]
    wait_until(lambda: _pending(t) == 0, WAIT_S, "nothing pending once pushed")
    assert len(t.commits_since(base)) == 4


def _pending(t: Tenant) -> int:
    """Writes pending on any worker of the branch, as published (Q3)."""
    return t.state().pending_total


def test_secret_is_refused_and_never_written(tenants: Tenants) -> None:
    """M10: a Secret in a watched namespace is refused (GitPathAccepted=False, reason
    SensitiveResource) and nothing of it reaches Git, while ConfigMaps still do."""
    t = tenants.make("mirror-secret", rules=[CONFIGMAPS, SECRETS], commit_window=PER_WRITE)
    base = t.tip()
    tenants.secret(t.namespace, "creds", {"password": "hunter2-e2e"})
    refused = t.wait_condition("GitPathAccepted", "False")
    assert refused["reason"] == "SensitiveResource"
    assert "creds" in refused["message"]
    t.system.core.create_namespaced_config_map(t.namespace, _configmap("plain", {"k": "v"}))
    t.wait_tip_moved(base)
    history = t.git("log", "-p", f"{base}..main")
    assert "secrets/" not in history
    assert "hunter2-e2e" not in history
    assert t.files() == sorted(["README.md", _cm_path(t, "plain"), *t.bootstrap_paths()])


def test_foreign_unknown_file_refuses_the_folder(tenants: Tenants) -> None:
    """M10: once someone pushes a file the product neither manages nor recognises
    (``deploy.sh``) into the folder, the next API edit is refused (GitPathAccepted=False,
    UnsupportedContent, naming the file) and nothing is written."""
    t = tenants.make("mirror-foreign", rules=[CONFIGMAPS], commit_window=PER_WRITE)
    t.system.core.create_namespaced_config_map(t.namespace, _configmap("first", {"k": "v"}))
    _wait_file(t, _cm_path(t, "first"), _cm_yaml(t, "first", "  k: v"))
    t.wait_condition("GitPathAccepted", "True")
    outside = t.system.push(t.repo, {f"{t.path}/deploy.sh": "#!/bin/sh\nkubectl apply -f .\n"})
    wait_until(lambda: t.state().observed_tip == outside, WAIT_S, "the steady tick")
    t.system.core.create_namespaced_config_map(t.namespace, _configmap("second", {"k": "v"}))
    refused = t.wait_condition("GitPathAccepted", "False")
    assert refused["reason"] == "UnsupportedContent"
    assert "deploy.sh" in refused["message"]
    assert t.tip() == outside
    assert _cm_path(t, "second") not in t.files()
    assert _pending(t) == 0


def _events_added(t: Tenant) -> int:
    """Entries ever appended to the branch's event stream (XINFO ``entries-added``)."""
    info: dict[str, Any] = t.client.xinfo_stream(t.keys.branch_events(t.bk))
    return int(info["entries-added"])


@pytest.fixture
def watcher_restarted(system: System) -> Iterator[None]:
    """Leave the module's watcher running whatever the test did."""
    yield
    if not system.procs.running("watcher"):
        start_process(system, "watcher")


def test_watcher_restart_resumes_without_a_full_replay(
    tenants: Tenants, system: System, watcher_restarted: None
) -> None:
    """M1: a watcher stopped with SIGTERM and started again resumes from its cursors: the edit
    made while it was down and the one made after are published, the objects it had already
    published are not (no relist), and no commit is made twice.

    Resuming is a watch from the stored resourceVersion, which "replays" what followed it
    (kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes)."""
    t = tenants.make("mirror-restart", rules=[CONFIGMAPS], commit_window=PER_WRITE)
    core = system.core
    for name in ("a", "b"):
        core.create_namespaced_config_map(t.namespace, _configmap(name, {"v": "1"}))
    _wait_file(t, _cm_path(t, "b"), _cm_yaml(t, "b", "  v: '1'"))
    _wait_file(t, _cm_path(t, "a"), _cm_yaml(t, "a", "  v: '1'"))
    base, added = t.tip(), _events_added(t)

    stop_process(system, "watcher")
    logs = system.directory / "logs"
    restarted_at = (logs / "watcher.log").stat().st_size  # the restart appends to the log
    core.patch_namespaced_config_map("a", t.namespace, {"data": {"v": "2"}})
    start_process(system, "watcher")
    _wait_file(t, _cm_path(t, "a"), _cm_yaml(t, "a", "  v: '2'"))
    core.create_namespaced_config_map(t.namespace, _configmap("c", {"v": "1"}))
    _wait_file(t, _cm_path(t, "c"), _cm_yaml(t, "c", "  v: '1'"))

    assert _events_added(t) - added == 2  # the missed edit and the new object, no relist
    relists = [
        line
        for line in (logs / "watcher.log").read_bytes()[restarted_at:].decode().splitlines()
        if "listing /configmaps" in line and f'"{t.namespace}/gt"' in line
    ]
    assert relists == []
    for name, writes in (("a", 2), ("b", 1), ("c", 1)):
        touching = t.git("log", "--format=%H", "main", "--", _cm_path(t, name)).split()
        assert len(touching) == writes, f"{name} written {len(touching)} times"
    assert len(t.commits_since(base)) == 2
