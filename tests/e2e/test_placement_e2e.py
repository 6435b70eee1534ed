"""Issue 27 with every process running: placement templates with ``useKustomize`` (27.6), and
``objectSelector`` on a WatchRule (27.3).

Each test makes its own tenant, edits ConfigMaps through the official client and reads the
repository as the Git host holds it.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
import yaml
from kubernetes import client

from tests.e2e.conftest import GROUP, VERSION, WAIT_S, Launcher, Tenant, Tenants
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

CONFIGMAPS: dict[str, Any] = {"apiGroups": [""], "resources": ["configmaps"]}


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(steady_tick="1s", reconcile_period="1s", lease_period="3s")


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> Tenants:
    return Tenants(system, e2e_redis)


def _create(t: Tenant, name: str, labels: dict[str, str] | None = None) -> None:
    meta = client.V1ObjectMeta(name=name, labels=labels)
    t.system.core.create_namespaced_config_map(
        t.namespace, client.V1ConfigMap(metadata=meta, data={"name": name})
    )


def _root(t: Tenant) -> dict[str, Any]:
    loaded = yaml.safe_load(t.show(f"{t.path}/kustomization.yaml"))
    assert isinstance(loaded, dict)
    return loaded


def _listed(t: Tenant, wanted: list[str]) -> None:
    def done() -> bool:
        files = t.files()
        if f"{t.path}/kustomization.yaml" not in files:
            return False
        return sorted(_root(t).get("resources") or []) == sorted(wanted)

    wait_until(done, WAIT_S, f"the root kustomization lists {wanted}")


def test_templates_and_a_root_kustomization(tenants: Tenants) -> None:
    """Files go where the template says (a label picks the folder, its fallback when it is
    missing), without metadata.namespace; the root kustomization lists each file through
    creates and deletes and carries the namespace; status.placement says KustomizeRoot."""
    placement = {
        "default": "{resource}/{label:team|shared}/{name}.yaml",
        "useKustomize": True,
    }
    t = tenants.make(
        "e2e-placement",
        rules=[CONFIGMAPS],
        commit_window="0s",
        target_spec={"placement": placement, "serializeNamespace": False},
    )
    _create(t, "web", {"team": "blue"})
    _create(t, "db")
    _listed(t, ["configmaps/blue/web.yaml", "configmaps/shared/db.yaml"])
    assert _root(t)["namespace"] == t.namespace
    web = yaml.safe_load(t.show(f"{t.path}/configmaps/blue/web.yaml"))
    assert web["metadata"] == {"name": "web", "labels": {"team": "blue"}}

    t.system.core.delete_namespaced_config_map("web", t.namespace)
    _listed(t, ["configmaps/shared/db.yaml"])
    assert f"{t.path}/configmaps/blue/web.yaml" not in t.files()
    status = t.system.get(GROUP, VERSION, t.namespace, "gittargets", "gt")["status"]
    assert status["placement"]["mode"] == "KustomizeRoot"


def test_only_labelled_objects_are_mirrored(tenants: Tenants) -> None:
    """27.3: an object enters Git when its label starts matching and leaves when it stops."""
    selected = {**CONFIGMAPS, "objectSelector": {"matchLabels": {"mirror": "yes"}}}
    t = tenants.make("e2e-selector", rules=[selected], commit_window="0s")
    path = f"{t.path}/{t.namespace}/configmaps/app.yaml"
    _create(t, "app")
    _create(t, "other", {"mirror": "yes"})
    other = f"{t.path}/{t.namespace}/configmaps/other.yaml"
    wait_until(lambda: other in t.files(), WAIT_S, other)
    assert path not in t.files()

    t.system.core.patch_namespaced_config_map(
        "app", t.namespace, {"metadata": {"labels": {"mirror": "yes"}}}
    )
    wait_until(lambda: path in t.files(), WAIT_S, path)
    t.system.core.patch_namespaced_config_map(
        "app", t.namespace, {"metadata": {"labels": {"mirror": "no"}}}
    )
    wait_until(lambda: path not in t.files(), WAIT_S, f"{path} removed")
    assert other in t.files()


def test_serialize_namespace_false_with_a_cluster_watch_rule(tenants: Tenants) -> None:
    """27.6 with a ClusterWatchRule into the same GitTarget: under useKustomize and
    serializeNamespace false, a ClusterRole and the tenant's own Namespace are written under
    ``_cluster/`` without a namespace and listed in the root, whose ``namespace:`` leaves them
    as they are; a Namespace of another name (the root's namespace would rename it when
    rendered) is refused with GitPathAccepted=False naming why, and never written."""
    t = tenants.make(
        "e2e-cluster-placement",
        rules=[CONFIGMAPS],
        commit_window="0s",
        target_spec={"placement": {"useKustomize": True}, "serializeNamespace": False},
    )
    t.system.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterproviders",
        "default",
        {"spec": {"clusterScoped": {"accessFrom": {"names": [t.namespace]}}}},
    )
    selected = {"matchLabels": {"mirror": t.namespace}}
    t.system.create(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterWatchRule",
            "metadata": {"name": t.namespace},
            "spec": {
                "targetRef": {"name": "gt", "namespace": t.namespace},
                "rules": [
                    {"apiGroups": [""], "resources": ["namespaces"], "objectSelector": selected},
                    {
                        "apiGroups": ["rbac.authorization.k8s.io"],
                        "resources": ["clusterroles"],
                        "objectSelector": selected,
                    },
                ],
            },
        }
    )
    labels = {"mirror": t.namespace}
    _create(t, "settings")
    t.system.core.patch_namespace(t.namespace, {"metadata": {"labels": labels}})
    rbac = client.RbacAuthorizationV1Api(t.system.api)
    rbac.create_cluster_role(
        client.V1ClusterRole(metadata=client.V1ObjectMeta(name="reader", labels=labels), rules=[])
    )
    role = "_cluster/rbac.authorization.k8s.io/clusterroles/reader.yaml"
    own = f"_cluster/namespaces/{t.namespace}.yaml"
    _listed(t, [f"{t.namespace}/configmaps/settings.yaml", own, role])
    assert _root(t)["namespace"] == t.namespace
    written = yaml.safe_load(t.show(f"{t.path}/{role}"))
    assert written["metadata"] == {"name": "reader", "labels": labels}
    assert yaml.safe_load(t.show(f"{t.path}/{own}"))["metadata"]["name"] == t.namespace
    assert "namespace:" not in t.show(f"{t.path}/{t.namespace}/configmaps/settings.yaml")

    other = f"{t.namespace}-other"
    t.system.core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=other, labels=labels))
    )

    def refused() -> bool:
        condition = t.condition("GitPathAccepted") or {}
        return condition.get("status") == "False"

    wait_until(refused, WAIT_S, "GitPathAccepted=False for the other Namespace")
    condition = t.condition("GitPathAccepted") or {}
    assert condition["reason"] == "KustomizeRenderRefused"
    message = condition["message"]
    assert f"Namespace {other}: {t.path}/kustomization.yaml sets namespace: " in message
    assert f"which renames the Namespace to {t.namespace}" in message
    assert f"{t.path}/_cluster/namespaces/{other}.yaml" not in t.files()
    assert yaml.safe_load(t.show(f"{t.path}/{own}"))["metadata"]["name"] == t.namespace
