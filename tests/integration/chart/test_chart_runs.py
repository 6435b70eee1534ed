"""The rendered chart, run: its RBAC is the API's access rules, its containers run as local
processes with exactly the rendered command and environment and each ServiceAccount's token
(``harness.py``). An API edit is mirrored and an outside push reaches Flux as a request (O4).

The same run shows that every permission the chart grants is used and none is missing (no
request refused); ``test_a_missing_rule_fails`` removes one rule and sees the product say so.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from sandbox.githost import Hook
from sandbox.githost.outside import git, push
from sandbox.processes import free_port
from shared.settings import Settings
from tests.helpers import wait_until
from tests.integration.chart.harness import ChartRun, running, user_of
from tests.integration.chart.render import NAMESPACE, RELEASE, Rendered, render

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
GROUP, VERSION = "gitopsreverser.io", "v1alpha1"
TENANT = "team-a"
WEBHOOK_TOKEN = "chart-webhook-token"
WAIT_S = 60.0
SOURCES = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
KUSTOMIZATIONS = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
#: Granted but not used by this run, each for a reason; every other permission is used. Also
#: not used: list and watch of the ``watcher.watchedResources`` other than ConfigMaps (the
#: WatchRule here selects ConfigMaps only; what WatchRules may select is a value).
NOT_EXERCISED = {
    # a GitProvider's spec.knownHostsRef ConfigMap (tests/integration/git/test_known_hosts.py);
    # this run's GitProvider is HTTP
    ("watcher", "get", "configmaps"),
    ("branch-worker", "get", "configmaps"),
    ("dispatcher", "get", "configmaps"),
    # a Refusal stamps the Kustomization; this run's request is a ForeignCommit (the source)
    ("dispatcher", "patch", "kustomizations"),
    # the watcher never patches: its ApplierConfigured check (S2) asks SelfSubjectAccessReviews
    # about its own identity, so it must hold the verbs the dispatcher uses (see grants.yaml)
    ("watcher", "patch", "kustomizations"),
    ("watcher", "patch", "gitrepositories"),
    # a generated signing key (P6; tests/integration/watcher/test_signing.py) and a
    # ClusterWatchRule's status (tests/integration/watcher/test_cluster_watch_rules.py)
    ("watcher", "create", "secrets"),
    ("watcher", "update", "secrets"),
    ("watcher", "patch", "clusterwatchrules/status"),
    # a CommitRequest's status and its deletion after the TTL
    # (tests/integration/watcher/test_commit_requests.py); this run makes none
    ("watcher", "patch", "commitrequests/status"),
    ("watcher", "delete", "commitrequests"),
}


def chart_values(prefix: str) -> dict[str, Any]:
    """An install on an external Redis (the test's), the receiver on, Flux's grant in the
    tenant's namespace, short timings; every port free on this machine."""
    return {
        "keyPrefix": prefix,
        "redis": {"builtin": False, "url": Settings.from_env().redis_url},
        "receiver": {"enabled": True, "port": free_port(), "replicas": 1},
        "watcher": {"metricsPort": free_port()},
        "branchWorker": {"metricsPort": free_port()},
        "dispatcher": {"metricsPort": free_port()},
        "flux": {"grant": {"enabled": True, "namespaces": [TENANT]}},
        "settings": {
            "steady_tick": "4s",
            "reconcile_period": "1s",
            "lease_period": "3s",
            "applier_status_period": "1s",
            "attempt_deadline": "20s",
            "receiver_workers": 1,
        },
    }


def without_rule(rendered: Rendered, role: str, resource: str) -> Rendered:
    """The render with the rule granting ``resource`` removed from Role/ClusterRole ``role``."""
    for obj in rendered:
        if obj["kind"] in ("Role", "ClusterRole") and obj["metadata"]["name"] == role:
            obj["rules"] = [r for r in obj["rules"] if resource not in r["resources"]]
    return rendered


@pytest.fixture(scope="module")
def redis_ready() -> None:
    import redis

    try:
        redis.Redis.from_url(Settings.from_env().redis_url).ping()
    except redis.ConnectionError as err:
        pytest.fail(f"chart runs need Redis (scripts/with-redis): {err}")


@contextmanager
def chart_running(tmp: Path, rendered: Rendered) -> Iterator[ChartRun]:
    """The rendered chart running on a sandbox of its own (``harness.running``)."""
    with pytest.MonkeyPatch.context() as patch:
        yield from running(tmp, rendered, NAMESPACE, patch)


@pytest.fixture(scope="module")
def chart_run(tmp_path_factory: pytest.TempPathFactory, redis_ready: None) -> Iterator[ChartRun]:
    rendered = render(chart_values(f"test:chart:{uuid.uuid4().hex[:8]}"))
    with chart_running(tmp_path_factory.mktemp("chart"), rendered) as run:
        tenant(run)
        for component in ("watcher", "branch-worker", "dispatcher", "receiver"):
            run.start(component)
        yield run


def tenant(run: ChartRun, commit_window: str = "1s") -> None:
    """TENANT: a repository, a GitProvider with credentials and a GitHub receiver, a GitTarget
    naming Flux's Kustomization ``ks``, a WatchRule for ConfigMaps, Flux's objects."""
    core = client.CoreV1Api(run.api)
    custom = client.CustomObjectsApi(run.api)
    url = run.githost.create_repo(
        TENANT, files={"README.md": b"chart\n", f"clusters/{TENANT}/README.md": b"gt\n"}
    )
    for name, data in (
        ("git", {"username": "git", "password": "pw"}),
        ("webhook", {"token": WEBHOOK_TOKEN}),
    ):
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        core.create_namespaced_secret(
            TENANT, client.V1Secret(metadata=client.V1ObjectMeta(name=name), data=encoded)
        )
    objects: list[tuple[str, str, dict[str, Any]]] = [
        ("ClusterProvider", "default", {"accessFrom": {"selector": {}}}),
        (
            "GitProvider",
            "gp",
            {
                "url": url,
                "secretRef": {"name": "git"},
                "allowedBranches": ["main"],
                "push": {"commitWindow": commit_window},
                "receiver": {"type": "github", "secretRef": {"name": "webhook"}},
            },
        ),
        (
            "GitTarget",
            "gt",
            {
                "providerRef": {"name": "gp"},
                "branch": "main",
                "path": f"clusters/{TENANT}",
                "applier": {
                    "kustomizationRef": {"name": "ks", "namespace": TENANT},
                    "quietPeriod": "2s",
                },
            },
        ),
        (
            "WatchRule",
            "wr",
            {
                "targetRef": {"name": "gt"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"]}],
            },
        ),
    ]
    for kind, name, spec in objects:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
        plural = kind.lower() + "s"
        if kind == "ClusterProvider":
            custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        else:
            custom.create_namespaced_custom_object(GROUP, VERSION, TENANT, plural, body)
    source = {"url": url, "interval": "24h", "ref": {"branch": "main"}}
    kustomization = {
        "interval": "24h",
        "path": "./clusters",
        "prune": False,
        "sourceRef": {"kind": "GitRepository", "name": "src"},
    }
    for (group, version, plural), kind, name, spec in (
        (SOURCES, "GitRepository", "src", source),
        (KUSTOMIZATIONS, "Kustomization", "ks", kustomization),
    ):
        body = {
            "apiVersion": f"{group}/{version}",
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
        custom.create_namespaced_custom_object(group, version, TENANT, plural, body)


def get(
    run: ChartRun, plural: str, name: str, group: str = GROUP, version: str = VERSION
) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(run.api).get_namespaced_custom_object(  # type: ignore[assignment]
        group, version, TENANT, plural, name
    )
    return found


def condition(run: ChartRun, kind: str) -> dict[str, Any]:
    for cond in get(run, "gittargets", "gt").get("status", {}).get("conditions", []):
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def tip(run: ChartRun) -> str:
    return git("rev-parse", "main", cwd=run.githost.repo_path(TENANT))


def applied(run: ChartRun, commit: str) -> bool:
    status = get(run, KUSTOMIZATIONS[2], "ks", *KUSTOMIZATIONS[:2]).get("status", {})
    return str(status.get("lastAppliedRevision", "")).endswith(f"sha1:{commit}")


def hook(run: ChartRun) -> None:
    """Point the Git host's webhook at the receiver once the watcher published its path."""

    def path() -> str:
        return str(
            get(run, "gitproviders", "gp")
            .get("status", {})
            .get("receiver", {})
            .get("webhookPath", "")
        )

    wait_until(lambda: bool(path()), WAIT_S, "the GitProvider's webhook path")
    port = run.rendered.container("receiver")["ports"][0]["containerPort"]
    url = f"http://127.0.0.1:{port}{path()}"
    run.githost.add_hook(TENANT, Hook(url, "github", "json", WEBHOOK_TOKEN))


def test_the_chart_mirrors_an_edit_and_asks_flux(chart_run: ChartRun, tmp_path: Path) -> None:
    """O4 (M1, R1, D4): with only the chart's permissions, an API edit becomes a commit and an
    outside push, delivered as a GitHub webhook, becomes one Flux request that applies it."""
    run = chart_run
    wait_until(
        lambda: condition(run, "ApplierConfigured").get("status") == "True",
        WAIT_S,
        "ApplierConfigured=True",
    )
    hook(run)
    base = tip(run)
    client.CoreV1Api(run.api).create_namespaced_config_map(
        TENANT, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="edited"), data={"a": "1"})
    )
    wait_until(lambda: tip(run) != base, WAIT_S, "the edit's commit")
    files = git("ls-tree", "-r", "--name-only", "main", cwd=run.githost.repo_path(TENANT))
    assert any(f.endswith("edited.yaml") for f in files.split()), files
    outside = push(run.githost.repo_url(TENANT), tmp_path / "clone", {"other.txt": "x\n"})
    wait_until(lambda: applied(run, outside), WAIT_S, "Flux applying the outside push")
    wait_until(
        lambda: (
            get(run, "gittargets", "gt")
            .get("status", {})
            .get("applier", {})
            .get("lastRequest", {})
            .get("commit")
            == outside
        ),
        WAIT_S,
        "status.applier.lastRequest for the outside commit",
    )


def test_no_request_was_refused_and_every_permission_was_used(chart_run: ChartRun) -> None:
    """O4: least privilege, both ways: no process met a 403, and each granted (verb, group,
    resource) served some request, except the documented NOT_EXERCISED."""
    for component in ("watcher", "branch-worker", "dispatcher", "receiver"):
        user = user_of(NAMESPACE, f"{RELEASE}-gitops-reverser-{component}")
        assert chart_run.audit.denied(user) == [], component
    prefix = user_of(NAMESPACE, f"{RELEASE}-gitops-reverser-")
    unused = {
        (user.removeprefix(prefix), verb, group, resource)
        for user, verb, group, resource in chart_run.audit.unused(chart_run.rules)
    }
    watchable = {resource for rule in _watched(chart_run) for resource in rule["resources"]} - {
        "configmaps"
    }
    # the run's WatchRule selects ConfigMaps only: the other watchable resources are listed
    # and watched by the watcher, and listed by the dispatcher's D3 check, only when selected
    unexplained = {
        (who, verb, resource)
        for who, verb, _, resource in unused
        if not (
            (who, verb) in {("watcher", "list"), ("watcher", "watch"), ("dispatcher", "list")}
            and resource in watchable
        )
    }
    assert unexplained == NOT_EXERCISED


def _watched(run: ChartRun) -> list[dict[str, Any]]:
    """The watcher's list+watch rules (``watcher.watchedResources`` as rendered)."""
    role = run.rendered.one("ClusterRole", f"{RELEASE}-gitops-reverser-watcher")
    return [r for r in role["rules"] if r["verbs"] == ["list", "watch"]]


def test_a_missing_rule_fails(tmp_path: Path, redis_ready: None) -> None:
    """O4: the same install without the grant's Kustomization rule: the watcher's check finds
    the permission missing and says so on the GitTarget (ApplierConfigured=False), so no
    request could be sent; the rule removed is the only difference."""
    rendered = without_rule(
        render(chart_values(f"test:chart:{uuid.uuid4().hex[:8]}")),
        f"{RELEASE}-gitops-reverser-flux-grant",
        "kustomizations",
    )
    with chart_running(tmp_path, rendered) as run:
        tenant(run)
        run.start("watcher")
        wait_until(
            lambda: condition(run, "ApplierConfigured").get("status") == "False",
            WAIT_S,
            "ApplierConfigured=False",
        )
        found = condition(run, "ApplierConfigured")
        assert "kustomizations" in found.get("message", ""), found
        user = user_of(NAMESPACE, f"{RELEASE}-gitops-reverser-watcher")
        refused = {(a.verb, a.resource) for a in run.audit.denied(user)}
        assert ("get", "kustomizations") in refused
