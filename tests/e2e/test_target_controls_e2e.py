"""A GitTarget suspended, resumed and asked to reconcile, with every process running (P7, P8,
P10, P13).

One system runs for the module; each test makes its own tenant and reads the result from the
Git host's bare repository. Waits are on conditions (the backlog in Redis, the tip, status),
never on time.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis
from kubernetes import client

from sandbox.githost.outside import OutsideClone
from shared.model.ids import GitTargetUid
from shared.model.target_controls import RECONCILE_ANNOTATION
from shared.store.suspension import Suspensions
from tests.e2e.conftest import CONFIGMAPS, WAIT_S, Launcher, Tenant, Tenants
from tests.e2e.system import GROUP, System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

VERSION = "v1alpha1"


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(
        steady_tick="1s", reconcile_period="1s", lease_period="3s", applier_status_period="1s"
    )


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> Tenants:
    return Tenants(system, e2e_redis)


def _cm(name: str, data: dict[str, str]) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def _path(t: Tenant, name: str) -> str:
    return f"{t.path}/{t.namespace}/configmaps/{name}.yaml"


def _patch_target(t: Tenant, body: dict[str, Any]) -> None:
    t.system.custom.patch_namespaced_custom_object(
        GROUP, VERSION, t.namespace, "gittargets", "gt", body
    )


def _wait_text(t: Tenant, path: str, needle: str) -> None:
    wait_until(lambda: path in t.files() and needle in t.show(path), WAIT_S, f"{needle} in {path}")


def _wait_remote(t: Tenant, revision: str, *by: str) -> None:
    """Wait until the GitTarget's status.remote shows ``revision`` verified by one of ``by``."""

    def shown() -> bool:
        remote = t.target().get("status", {}).get("remote") or {}
        return remote.get("revision") == revision and remote.get("verifiedBy") in by

    wait_until(shown, WAIT_S, f"status.remote {revision[:8]} by {' or '.join(by)}")


def test_a_suspended_target_writes_nothing_and_commits_the_final_state_on_resume(
    tenants: Tenants,
) -> None:
    """P7: while suspended the edits wait in Redis and the branch does not move; Ready is True
    with reason Suspended. Resumed, the final value of each edited object is committed, and an
    object made and deleted meanwhile leaves nothing."""
    t = tenants.make("ctl-suspend", rules=[CONFIGMAPS], commit_window="0s")
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _cm("app", {"mode": "blue"}))
    _wait_text(t, _path(t, "app"), "mode: blue")
    uid = GitTargetUid(str(t.target()["metadata"]["uid"]))

    _patch_target(t, {"spec": {"suspend": True}})
    wait_until(
        lambda: (t.condition("Ready") or {}).get("reason") == "Suspended", WAIT_S, "Suspended"
    )
    backlog = Suspensions(t.client, t.keys)
    wait_until(lambda: uid in backlog.suspended(), WAIT_S, "the GitTarget marked suspended")
    before = t.tip()
    for mode in ("green", "red", "violet"):
        core.patch_namespaced_config_map("app", t.namespace, {"data": {"mode": mode}})
    core.create_namespaced_config_map(t.namespace, _cm("db", {"size": "3"}))
    core.create_namespaced_config_map(t.namespace, _cm("tmp", {"x": "1"}))
    core.delete_namespaced_config_map("tmp", t.namespace)
    wait_until(lambda: backlog.backlog_size(uid) == 3, WAIT_S, "three objects collected")
    assert t.tip() == before, "a suspended GitTarget wrote nothing"
    assert t.condition("Ready") is not None and t.condition("Ready")["status"] == "True"

    _patch_target(t, {"spec": {"suspend": False}})
    _wait_text(t, _path(t, "db"), "size: '3'")
    _wait_text(t, _path(t, "app"), "mode: violet")
    assert _path(t, "tmp") not in t.files()
    assert backlog.suspended() == set() and backlog.backlog_size(uid) == 0
    # P10: our push, shown on the GitTarget; the steady tick (1s here) may have read the same
    # commit from the remote since, which shows as Fetch (tests/integration/watcher pins Push)
    _wait_remote(t, t.tip(), "Push", "Fetch")
    wait_until(
        lambda: (t.condition("Ready") or {}).get("reason") == "Succeeded", WAIT_S, "Ready again"
    )


def test_a_reconcile_request_rebuilds_the_folder_from_the_cluster(tenants: Tenants) -> None:
    """P8: a file deleted by hand comes back, a file of an object the cluster lacks goes
    (prune OnEvent), and status answers with the annotation's value."""
    t = tenants.make("ctl-reconcile", rules=[CONFIGMAPS], commit_window="0s")
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _cm("app", {"mode": "blue"}))
    core.create_namespaced_config_map(t.namespace, _cm("db", {"size": "1"}))
    _wait_text(t, _path(t, "db"), "size: '1'")
    _wait_text(t, _path(t, "app"), "mode: blue")

    ghost = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ghost\n"
        f"  namespace: {t.namespace}\ndata:\n  a: b\n"
    )
    clone = OutsideClone(t.url, t.system.directory / f"hand-{uuid.uuid4().hex[:6]}")
    clone.git("rm", "-q", _path(t, "app"))
    clone.write({_path(t, "ghost"): ghost})
    pushed = clone.commit("by hand")
    clone.push()
    wait_until(lambda: t.state().observed_tip == pushed, WAIT_S, "the hand edit observed")
    assert _path(t, "app") not in t.files() and _path(t, "ghost") in t.files()

    _patch_target(t, {"metadata": {"annotations": {RECONCILE_ANNOTATION: "2026-12-06T10:00:00Z"}}})
    wait_until(
        lambda: (
            t.target().get("status", {}).get("lastHandledReconcileAt") == "2026-12-06T10:00:00Z"
        ),
        WAIT_S,
        "the request answered",
    )
    _wait_text(t, _path(t, "app"), "mode: blue")
    wait_until(lambda: _path(t, "ghost") not in t.files(), WAIT_S, "the ghost's file removed")
    assert "size: '1'" in t.show(_path(t, "db"))


def test_an_outside_push_is_never_overwritten_by_older_cluster_values(tenants: Tenants) -> None:
    """P13: a branch that moved (an outside push, seen by the steady tick here, Q7) triggers no
    snapshot of the cluster: the pushed file keeps the push's value, though the cluster still
    holds the older one. A later API edit of another object is committed after it, so the owner
    has handled the push by then."""
    t = tenants.make("ctl-outside", rules=[CONFIGMAPS], commit_window="0s")
    core = t.system.core
    core.create_namespaced_config_map(t.namespace, _cm("app", {"mode": "blue"}))
    _wait_text(t, _path(t, "app"), "mode: blue")
    newer = t.show(_path(t, "app")).replace("mode: blue", "mode: pushed")
    pushed = t.system.push(t.repo, {_path(t, "app"): newer + "\n"})
    wait_until(lambda: t.state().observed_tip == pushed, WAIT_S, "the outside push observed")
    _wait_remote(t, pushed, "Fetch")  # P10: read from the remote's ref advertisement

    core.create_namespaced_config_map(t.namespace, _cm("later", {"count": "1"}))
    _wait_text(t, _path(t, "later"), "count: '1'")
    assert "mode: pushed" in t.show(_path(t, "app"))
    assert t.commits_since(pushed) == [t.tip()], "one commit after the push: the later edit"
    assert t.changed_objects(t.tip()) == [_path(t, "later")]
