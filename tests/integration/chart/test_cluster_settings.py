"""The settings real clusters need (issue 24 §5), globally and per process: extra env, volumes
and mounts (a private CA bundle, a proxy), labels, priority, scheduling, spread, workload
identity; and the schema still refuses anything else."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.integration.chart.render import RELEASE, Obj, Rendered, render
from tests.integration.chart.test_render import (
    CA_MOUNT,
    CA_VOLUME,
    DIGEST,
    REAL_CLUSTER,
    SPREAD,
    TOLERATION,
)

PRODUCT = ("watcher", "branch-worker", "dispatcher", "receiver", "dashboard")
REDIS = f"{RELEASE}-gitops-reverser-redis"


@pytest.fixture(scope="module")
def real() -> Rendered:
    return render(REAL_CLUSTER)


def _pod(rendered: Rendered, component: str) -> Obj:
    if component == "redis":
        template: Obj = rendered.one("StatefulSet", REDIS)["spec"]["template"]
    else:
        template = rendered.deployment(component)["spec"]["template"]
    return template


def test_extra_env_volumes_and_mounts_reach_every_product_container(real: Rendered) -> None:
    """The global lists first, then the process's own; Redis's container gets none."""
    for component in PRODUCT:
        container = real.container(component)
        names = [e["name"] for e in container["env"]]
        assert names.index("HTTPS_PROXY") < names.index("SSL_CERT_FILE"), component
        assert CA_MOUNT in container["volumeMounts"], component
        assert CA_VOLUME in _pod(real, component)["spec"]["volumes"], component
    watcher = [e["name"] for e in real.container("watcher")["env"]]
    assert watcher.index("SSL_CERT_FILE") < watcher.index("NO_PROXY")
    assert "NO_PROXY" not in [e["name"] for e in real.container("dispatcher")["env"]]
    redis_pod = _pod(real, "redis")["spec"]
    assert "env" not in redis_pod["containers"][0]
    assert CA_VOLUME not in redis_pod["volumes"]


@pytest.mark.parametrize("component", [*PRODUCT, "redis"])
def test_scheduling_is_the_global_under_the_process_own(real: Rendered, component: str) -> None:
    """priorityClassName replaced, nodeSelector merged, tolerations joined, a spread constraint
    selecting the pod's own kind; podLabels added without touching the selector."""
    pod = _pod(real, component)
    spec, labels = pod["spec"], pod["metadata"]["labels"]
    own = {"branch-worker": "git-heavy", "redis": "storage"}
    assert spec["priorityClassName"] == own.get(component, "platform")
    selector = {
        "redis": {"kubernetes.io/os": "linux", "disk": "ssd"},
        "dashboard": {"kubernetes.io/os": "linux", "pool": "tools"},
    }
    assert spec["nodeSelector"] == selector.get(component, {"kubernetes.io/os": "linux"})
    assert spec["tolerations"][0] == TOLERATION
    assert len(spec["tolerations"]) == (2 if component == "branch-worker" else 1)
    (spread,) = spec["topologySpreadConstraints"]
    assert spread == SPREAD | {"labelSelector": {"matchLabels": spread_labels(labels)}}
    assert labels["app.kubernetes.io/component"] == component
    assert labels["team"] == ("watchers" if component == "watcher" else "platform")
    assert ("tier" in labels) == (component == "redis")


def spread_labels(labels: dict[str, str]) -> dict[str, str]:
    keys = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component")
    return {k: labels[k] for k in keys}


def test_a_pod_label_never_replaces_a_selector_label() -> None:
    """A Deployment whose pods lost their selector label would be refused by the API."""
    found = render({"podLabels": {"app.kubernetes.io/component": "mine", "team": "a"}})
    for component in ("watcher", "branch-worker", "dispatcher", "redis"):
        labels = _pod(found, component)["metadata"]["labels"]
        assert labels["app.kubernetes.io/component"] == component and labels["team"] == "a"


def test_service_accounts_carry_the_annotations(real: Rendered) -> None:
    """Workload identity: the global annotation on every ServiceAccount, a process's own wins."""
    roles = {
        o["metadata"]["name"].removeprefix(f"{RELEASE}-gitops-reverser-"): o["metadata"][
            "annotations"
        ]["iam.example.com/role"]
        for o in real.of_kind("ServiceAccount")
    }
    assert roles == {
        "watcher": "watcher",
        "branch-worker": "gitops",
        "dispatcher": "gitops",
        "receiver": "gitops",
        "dashboard": "gitops",
        "redis": "gitops",
    }
    assert all("annotations" not in o["metadata"] for o in render().of_kind("ServiceAccount"))


def test_images_are_pulled_by_digest_when_given(real: Rendered) -> None:
    """image.digest: repository@digest, no tag; redis.image takes tag@digest as written."""
    product = f"ghcr.io/gitops-reverser/gitops-reverser@{DIGEST}"
    for component in PRODUCT:
        assert real.container(component)["image"] == product
    redis_pod = _pod(real, "redis")["spec"]
    assert redis_pod["initContainers"][0]["image"] == product
    assert redis_pod["containers"][0]["image"].endswith(f"8.1.11-alpine@{DIGEST}")
    assert render().container("watcher")["image"].endswith("gitops-reverser:0.1.0")


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"watcher": {"extraEnvs": []}}, "extraEnvs"),
        ({"podLabel": {"a": "b"}}, "podLabel"),
        ({"redis": {"extraEnv": []}}, "extraEnv"),
        ({"extraEnv": [{"value": "no name"}]}, "name"),
        ({"extraVolumeMounts": [{"name": "ca"}]}, "mountPath"),
        ({"image": {"digest": "latest"}}, "digest"),
        ({"redis": {"image": "valkey/valkey:8@sha256:short"}}, "image"),
        ({"serviceAccount": {"name": "mine"}}, "name"),
        ({"networkPolicy": {"metricsFrom": {"podSelector": {}}}}, "metricsFrom"),
    ],
)
def test_the_schema_stays_strict(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        render(values)
