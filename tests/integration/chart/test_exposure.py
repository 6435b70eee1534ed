"""Network and exposure (issue 24 §7): NetworkPolicies on by default (Redis only from this
release's processes, the receiver from anywhere, metrics only from networkPolicy.metricsFrom,
the dashboard from nothing), and an Ingress that routes the webhooks alone."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.receiver.hook import PREFIX
from tests.integration.chart.render import RELEASE, Obj, Rendered, render
from tests.integration.chart.test_render import REAL_CLUSTER, VALUE_SETS

NAME = f"{RELEASE}-gitops-reverser"
PRODUCT = ("watcher", "branch-worker", "dispatcher", "receiver", "dashboard")


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels and In/NotIn/Exists) applied to ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for rule in selector.get("matchExpressions", []):
        value, op = labels.get(rule["key"]), rule["operator"]
        if op == "In" and value not in rule["values"]:
            return False
        if op == "NotIn" and value in rule["values"]:
            return False
        if op == "Exists" and value is None:
            return False
    return True


def pod_labels(rendered: Rendered) -> dict[str, dict[str, str]]:
    """Each workload's pod labels, by component."""
    found = {}
    for obj in rendered.of_kind("Deployment") + rendered.of_kind("StatefulSet"):
        labels = obj["spec"]["template"]["metadata"]["labels"]
        found[labels["app.kubernetes.io/component"]] = labels
    return found


def policy_of(rendered: Rendered, component: str) -> Obj:
    """The one NetworkPolicy selecting ``component``'s pods."""
    labels = pod_labels(rendered)[component]
    (found,) = [
        p for p in rendered.of_kind("NetworkPolicy") if selects(p["spec"]["podSelector"], labels)
    ]
    assert found["spec"]["policyTypes"] == ["Ingress"]
    return found


@pytest.fixture(scope="module")
def real() -> Rendered:
    return render(REAL_CLUSTER)


def test_redis_takes_only_this_releases_processes(real: Rendered) -> None:
    """Every product pod (and only those) is a peer of Redis's policy, on port 6379 alone."""
    (rule,) = policy_of(real, "redis")["spec"]["ingress"]
    assert rule["ports"] == [{"port": 6379, "protocol": "TCP"}]
    (peer,) = rule["from"]
    assert set(peer) == {"podSelector"}  # this namespace only
    labels = pod_labels(real)
    assert {c for c, pod in labels.items() if selects(peer["podSelector"], pod)} == set(PRODUCT)
    other = dict(labels["watcher"], **{"app.kubernetes.io/instance": "another-release"})
    assert not selects(peer["podSelector"], other)
    assert not selects(peer["podSelector"], {"app": "anything"})


def test_metrics_ports_only_from_metrics_from(real: Rendered) -> None:
    """The watcher, branch workers and dispatchers: their metrics port from metricsFrom; by
    default from no pod at all (an empty ingress list)."""
    ports = {"watcher": 9090, "branch-worker": 9091, "dispatcher": 9092}
    for component, port in ports.items():
        (rule,) = policy_of(real, component)["spec"]["ingress"]
        assert rule["from"] == REAL_CLUSTER["networkPolicy"]["metricsFrom"]
        assert rule["ports"] == [{"port": port, "protocol": "TCP"}]
        assert "ingress" not in policy_of(render(), component)["spec"]


def test_the_receiver_takes_webhooks_from_anywhere_and_the_dashboard_nothing(
    real: Rendered,
) -> None:
    (rule,) = policy_of(real, "receiver")["spec"]["ingress"]
    assert "from" not in rule and rule["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert "ingress" not in policy_of(real, "dashboard")["spec"]


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_every_workload_has_a_policy_by_default(name: str) -> None:
    """networkPolicy.enabled is on by default: no pod of the release is left open."""
    rendered = render(VALUE_SETS[name])
    for component in pod_labels(rendered):
        assert policy_of(rendered, component)
    off = render({**VALUE_SETS[name], "networkPolicy": {"enabled": False}})
    assert not off.of_kind("NetworkPolicy")


def ingress_paths(values: dict[str, Any]) -> list[tuple[str, str]]:
    (ingress,) = render(values).of_kind("Ingress")
    (rule,) = ingress["spec"]["rules"]
    return [(p["path"], p["pathType"]) for p in rule["http"]["paths"]]


def test_the_ingress_routes_only_the_webhooks() -> None:
    """/hook/ (the receiver's webhook prefix) alone; /metrics, /healthz, /readyz and the audit
    route stay inside the cluster unless the audit path is asked for."""
    assert ingress_paths(VALUE_SETS["external-flux"]) == [(PREFIX, "Prefix")]
    assert ingress_paths(REAL_CLUSTER) == [(PREFIX, "Prefix"), ("/audit-webhook/", "Prefix")]


def steps(notes: str) -> list[int]:
    return [int(m) for m in re.findall(r"^(\d+)\. ", notes, flags=re.MULTILINE)]


@pytest.mark.parametrize("name", [*sorted(VALUE_SETS), "no-grant-dashboard"])
def test_notes_number_their_steps_and_say_https_only_with_tls(name: str) -> None:
    """Issue 24 §10: steps 1, 2, 3, ... with no gap; https:// only when the Ingress has TLS."""
    values = VALUE_SETS.get(name, {"dashboard": {"enabled": True}})
    notes = render(values).notes
    assert steps(notes) == list(range(1, len(steps(notes)) + 1)) and len(steps(notes)) >= 3
    plain = render(REAL_CLUSTER).notes
    assert "http://hooks.example.com" in plain and "https://" not in plain
    assert "https://hooks.example.com" in render(VALUE_SETS["external-flux"]).notes
