"""An API edit of an object in a kustomize folder, with every process running (P2).

The GitTarget's folder holds a kustomization whose ``images`` and ``replicas`` entries cover a
Deployment; Flux's Kustomization builds ``./clusters``, which lists the folder. An image and
replica change made through the API updates the entries (not the Deployment's file), and the
sandbox's Flux double, building the same subset (sandbox/flux/kustomize_build.py), applies
the commit and leaves the edit in place: what Flux renders is what the API holds.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from kubernetes import client

from shared.model.manifest import render
from tests.e2e.conftest import CONFIGMAPS, WAIT_S, FluxTenants
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

DEPLOYMENTS: dict[str, Any] = {"apiGroups": ["apps"], "resources": ["deployments"]}
NAME = "e2e-kustomize"


def _web() -> dict[str, Any]:
    """The Deployment's file, with the defaults the API server fills in (so that mirroring
    the applied object changes nothing), image tag and replicas left to the entries."""
    container = {
        "image": "nginx:1.25",
        "imagePullPolicy": "IfNotPresent",
        "name": "web",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    pod = {
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                "type": "RollingUpdate",
            },
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod},
        },
    }


KUST = f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAME}
resources:
- web.yaml
images:
- name: nginx
  newTag: '1.27'  # the release
replicas:
- name: web
  count: 2
"""


def test_an_image_and_replica_edit_updates_the_entries_and_flux_applies_the_same(
    tenants: FluxTenants,
) -> None:
    """P2 edit-through end to end: the commit changes the kustomization's newTag and count
    (the Deployment's own file keeps nginx:1.25 and one replica), and Flux's apply of that
    commit leaves the API object as it was edited."""
    folder = f"clusters/{NAME}"
    flux = tenants.make_flux(
        NAME,
        rules=[DEPLOYMENTS],
        files={
            "clusters/kustomization.yaml": f"resources:\n- {NAME}\n",
            f"{folder}/kustomization.yaml": KUST,
            f"{folder}/web.yaml": render(_web()).decode(),
        },
    )
    apps = client.AppsV1Api(flux.system.core.api_client)
    applied = apps.read_namespaced_deployment("web", NAME)
    assert applied.spec.template.spec.containers[0].image == "nginx:1.27"
    assert applied.spec.replicas == 2
    edit = {"spec": {"replicas": 5, "template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.28"}
    ]}}}}  # fmt: skip
    apps.patch_namespaced_deployment("web", NAME, edit)

    def entries() -> Any:
        return yaml.safe_load(flux.tenant.show(f"{folder}/kustomization.yaml"))

    wait_until(lambda: entries()["images"][0].get("newTag") == "1.28", WAIT_S, "the entry")
    wait_until(lambda: entries()["replicas"][0]["count"] == 5, WAIT_S, "the replicas entry")
    ours = flux.tenant.tip()
    assert "# the release" in flux.tenant.show(f"{folder}/kustomization.yaml")
    own = yaml.safe_load(flux.tenant.show(f"{folder}/web.yaml"))
    assert own["spec"]["replicas"] == 1
    assert own["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert (
        flux.tenant.condition("GitPathAccepted") is None
        or (flux.tenant.condition("GitPathAccepted") or {}).get("status") == "True"
    )
    wait_until(lambda: flux.applied(ours), WAIT_S, "Flux to apply our commit (CatchUp)")
    after = apps.read_namespaced_deployment("web", NAME)
    assert after.spec.template.spec.containers[0].image == "nginx:1.28"
    assert after.spec.replicas == 5


def test_a_feature_outside_the_subset_is_named_in_the_gittarget_condition(
    tenants: FluxTenants,
) -> None:
    """P2/M10: a kustomization with namePrefix refuses the folder; the GitTarget's
    GitPathAccepted=False condition says UnsupportedContent and names the feature, and
    nothing is written."""
    name = "e2e-kustomize-refused"
    folder = f"clusters/{name}"
    kust = f"namespace: {name}\nnamePrefix: dev-\nresources: []\n"
    tenant = tenants.make(
        name, rules=[CONFIGMAPS], files={f"{folder}/kustomization.yaml": kust.encode()}
    )
    tenant.wait_owned()
    base = tenant.tip()
    tenant.system.core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app"), data={"k": "v"})
    )
    refused = tenant.wait_condition("GitPathAccepted", "False")
    assert refused["reason"] == "UnsupportedContent"
    assert "namePrefix" in refused["message"]
    assert f"{folder}/kustomization.yaml" in refused["message"]
    assert tenant.tip() == base
