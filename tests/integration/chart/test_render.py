"""The chart rendered by Helm for the default values and a few realistic value sets (O4).

Each test would fail if the chart were wrong in the way it names: a manifest the Kubernetes
API of the oldest supported version (1.29, Chart.yaml's kubeVersion) or the newest would
refuse, a value the schema should refuse, an impossible combination that renders, a
permission wider than the processes need, a container that could write its root filesystem.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from shared.settings import Settings
from tests.integration.chart.render import CHART, COMMANDS, RELEASE, Rendered, lint, render

CA_VOLUME = {"name": "ca", "configMap": {"name": "corp-ca"}}
CA_MOUNT = {"name": "ca", "mountPath": "/etc/corp-ca", "readOnly": True}
SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gitops", "effect": "NoSchedule"}
DIGEST = "sha256:" + "ab" * 32
REAL_CLUSTER: dict[str, Any] = {
    "image": {"digest": DIGEST},
    "extraEnv": [
        {"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"},
        {"name": "SSL_CERT_FILE", "value": "/etc/corp-ca/ca.crt"},
    ],
    "extraVolumes": [CA_VOLUME],
    "extraVolumeMounts": [CA_MOUNT],
    "podLabels": {"team": "platform"},
    "priorityClassName": "platform",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [TOLERATION],
    "topologySpreadConstraints": [SPREAD],
    "serviceAccount": {"annotations": {"iam.example.com/role": "gitops"}},
    "redis": {
        "image": f"docker.io/valkey/valkey:8.1.11-alpine@{DIGEST}",
        "nodeSelector": {"disk": "ssd"},
        "priorityClassName": "storage",
        "podLabels": {"tier": "store"},
    },
    "watcher": {
        "extraEnv": [{"name": "NO_PROXY", "value": ".svc,.cluster.local"}],
        "podLabels": {"team": "watchers"},
        "serviceAccount": {"annotations": {"iam.example.com/role": "watcher"}},
    },
    "branchWorker": {
        "replicas": 3,
        "tolerations": [{"key": "git", "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "git-heavy",
    },
    "receiver": {
        "enabled": True,
        "ingress": {"enabled": True, "host": "hooks.example.com", "audit": {"enabled": True}},
    },
    "dashboard": {"enabled": True, "nodeSelector": {"pool": "tools"}},
    "networkPolicy": {
        "metricsFrom": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ]
    },
}
#: Realistic installs: the default; an external TLS Redis with the receiver behind an Ingress
#: and an autoscaler, Flux's grant in two namespaces; an existing Secret, Argo CD's grant
#: cluster-wide, everything optional on and several replicas.
VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "external-flux": {
        "redis": {"builtin": False, "url": "rediss://:secret@redis.example.net:6380/0"},
        "receiver": {
            "enabled": True,
            "ingress": {"enabled": True, "host": "hooks.example.com", "tlsSecretName": "hooks"},
            "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6},
        },
        "flux": {"grant": {"enabled": True, "namespaces": ["flux-system", "team-a"]}},
        "settings": {"steady_tick": "30s", "log_level": "DEBUG"},
    },
    "everything": {
        "redis": {"builtin": False, "existingSecret": {"name": "redis-url", "key": "url"}},
        "receiver": {"enabled": True, "replicas": 3},
        "branchWorker": {"replicas": 3, "settings": {"branch_threads": 16}},
        "dispatcher": {"replicas": 2},
        "argocd": {"grant": {"enabled": True, "namespaces": []}},
        "flux": {"grant": {"enabled": True}},
        "dashboard": {"enabled": True},
        "podDisruptionBudget": {"enabled": True},
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
        "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "GitOps"}},
        "keyPrefix": "team-b:v1",
    },
    # What a real cluster sets (issue 24 §5, §7): a CA bundle and a proxy for every process,
    # scheduling, labels and priority globally and per process, Redis pinned by digest on its
    # own nodes, workload identity, Prometheus allowed to scrape.
    "real-cluster": REAL_CLUSTER,
}
#: Kinds the Kubernetes OpenAPI does not describe (the Prometheus Operator's CRDs; the rules are
#: checked by promtool: test_alerts.py).
NOT_BUILT_IN = {"ServiceMonitor", "PrometheusRule"}
OLDEST, NEWEST = "1.29.0", kubernetes_validate.latest_version()


@pytest.fixture(scope="module", params=sorted(VALUE_SETS))
def rendered(request: pytest.FixtureRequest) -> Rendered:
    return render(VALUE_SETS[request.param])


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_helm_lint_finds_nothing_to_warn_about(name: str) -> None:
    """O4: Helm's strict lint (warnings fail) passes for every value set."""
    found = helm.lint(str(CHART), VALUE_SETS[name], strict=True, namespace="gitops-reverser")
    assert found["errors"] == []
    assert [m for m in found["messages"] if m["severity"] >= 2] == []
    assert lint()["errors"] == []


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_every_manifest_is_valid_kubernetes(rendered: Rendered, version: str) -> None:
    """O4: each rendered object is valid against the OpenAPI schema (strict: no unknown
    field) of the oldest supported Kubernetes and the newest."""
    checked = 0
    for obj in rendered:
        if obj["kind"] in NOT_BUILT_IN:
            continue
        kubernetes_validate.validate(obj, version, strict=True)
        checked += 1
    assert checked >= 10


def test_the_project_crds_are_valid_kubernetes() -> None:
    """O4: the CRDs in crds/ (installed first by helm) are valid CustomResourceDefinitions."""
    files = sorted((CHART / "crds").glob("*.yaml"))
    assert len(files) == 6
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            kubernetes_validate.validate(doc, OLDEST, strict=True)


def test_a_wrong_manifest_is_caught() -> None:
    """The validation above can fail: a Deployment with a misspelt field is refused."""
    bad = render().deployment("watcher")
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, OLDEST, strict=True)


def test_defaults_run_three_processes_with_redis_built_in() -> None:
    """O4: receiver and dashboard off, no grant, Redis built in with AOF on every write; its
    password is not rendered (no Secret at all): the only Role lets Redis's init container
    read or create it."""
    found = render()
    assert found.components() == {"watcher", "branch-worker", "dispatcher"}
    assert found.names("StatefulSet") == {f"{RELEASE}-gitops-reverser-redis"}
    assert not found.of_kind("Service") or found.names("Service") == {
        f"{RELEASE}-gitops-reverser-redis"
    }
    assert not found.of_kind("Ingress") and not found.of_kind("HorizontalPodAutoscaler")
    assert (
        found.names("Role")
        == found.names("RoleBinding")
        == {f"{RELEASE}-gitops-reverser-redis-auth"}
    )
    config = found.one("ConfigMap", f"{RELEASE}-gitops-reverser-redis")["data"]["redis.conf"]
    assert "appendonly yes" in config.splitlines()
    assert "appendfsync always" in config.splitlines()
    assert not found.of_kind("Secret")
    claims = found.one("StatefulSet", f"{RELEASE}-gitops-reverser-redis")["spec"][
        "volumeClaimTemplates"
    ]
    assert claims[0]["spec"]["resources"]["requests"]["storage"] == "2Gi"


def _app_version() -> str:
    version: str = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    return version


def _images(found: Rendered) -> set[str]:
    """Every image a pod of the render runs, init containers included."""
    images: set[str] = set()
    for obj in found:
        pod = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            images.add(container["image"])
    return images


def test_the_chart_pulls_only_the_products_image_pinned_as_it_is_pinned() -> None:
    """Issue 24 item 8: no public image of someone else's by default (the built-in Redis runs
    the product image's Debian redis-server), so one digest pins every container; a Valkey
    image named in redis.image is used as written, digest included."""
    everything_on = {"receiver": {"enabled": True}, "dashboard": {"enabled": True}}
    assert _images(render(everything_on)) == {
        "ghcr.io/gitops-reverser/gitops-reverser:" + _app_version()
    }
    pinned = render({**everything_on, "image": {"digest": DIGEST}})
    assert _images(pinned) == {f"ghcr.io/gitops-reverser/gitops-reverser@{DIGEST}"}
    valkey = f"docker.io/valkey/valkey:8.1.11-alpine@{DIGEST}"
    chosen = render({"redis": {"image": valkey}})
    redis_pod = chosen.one("StatefulSet", f"{RELEASE}-gitops-reverser-redis")["spec"]["template"]
    assert redis_pod["spec"]["containers"][0]["image"] == valkey


def test_each_process_is_locked_down_and_probed(rendered: Rendered) -> None:
    """O4: non-root, no privilege escalation, read-only root, /healthz and /readyz on the
    metrics port, resources, its own ServiceAccount, the image's console script."""
    accounts = set()
    for component in rendered.components() - {"dashboard"}:
        container = rendered.container(component)
        context = container["securityContext"]
        assert context["runAsNonRoot"] and context["readOnlyRootFilesystem"]
        assert context["allowPrivilegeEscalation"] is False
        assert container["command"] == [COMMANDS[component]]
        port = container["ports"][0]["name"]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
        assert container["resources"]["requests"] and container["resources"]["limits"]
        pod = rendered.deployment(component)["spec"]["template"]["spec"]
        accounts.add(pod["serviceAccountName"])
    assert len(accounts) == len(rendered.components() - {"dashboard"})


def test_branch_worker_clones_into_an_empty_dir() -> None:
    """O4: the clones live in an emptyDir, the only writable place besides /tmp."""
    found = render()
    pod = found.deployment("branch-worker")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in found.container("branch-worker")["env"]}
    mounts = {m["mountPath"]: m["name"] for m in found.container("branch-worker")["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts[env["GITOPS_REVERSER_WORK_DIR"]]]


def test_nobody_has_a_wildcard(rendered: Rendered) -> None:
    """O4: no rule of any Role or ClusterRole names "*" (verbs, groups or resources)."""
    rules = [
        r for kind in ("Role", "ClusterRole") for o in rendered.of_kind(kind) for r in o["rules"]
    ]
    assert rules
    for rule in rules:
        for field in ("verbs", "apiGroups", "resources"):
            assert "*" not in rule.get(field, []), rule


def test_secrets_are_read_by_name_never_listed(rendered: Rendered) -> None:
    """T3/O4: Secrets are read by name: no process lists or watches them; the watcher alone
    also creates or updates one, to store a signing key a GitTarget asked it to generate (P6)."""
    for role in rendered.of_kind("ClusterRole"):
        for rule in role["rules"]:
            if "secrets" in rule["resources"]:
                allowed = (
                    [["get"], ["create", "update"]]
                    if role["metadata"]["name"].endswith("-watcher")
                    else [["get"]]
                )
                assert rule["verbs"] in allowed, role["metadata"]["name"]


def test_grants_have_exactly_the_documented_verbs() -> None:
    """O4: Flux get+patch on GitRepositories and Kustomizations, Argo CD get+update on
    Applications; a namespace list makes Roles, none makes a ClusterRole; no list, no watch.
    The branch worker only reads the Kustomization or Application (its last applied commit at
    a branch's first start, issue 23): a get-only twin of each grant."""
    found = render(VALUE_SETS["external-flux"])
    roles = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in found.of_kind("Role")}
    assert roles == {
        (ns, f"{RELEASE}-gitops-reverser-flux{kind}")
        for ns in ("flux-system", "team-a")
        for kind in ("-grant", "-read-grant")
    }
    by_name = {o["metadata"]["name"]: o for o in found.of_kind("Role")}  # alike in each namespace
    rules = by_name[f"{RELEASE}-gitops-reverser-flux-grant"]["rules"]
    assert {(r["resources"][0], tuple(r["verbs"])) for r in rules} == {
        ("gitrepositories", ("get", "patch")),
        ("kustomizations", ("get", "patch")),
    }
    read = by_name[f"{RELEASE}-gitops-reverser-flux-read-grant"]["rules"]
    assert {(r["resources"][0], tuple(r["verbs"])) for r in read} == {("kustomizations", ("get",))}
    everything = render(VALUE_SETS["everything"])
    argo = everything.one("ClusterRole", f"{RELEASE}-gitops-reverser-argocd-grant")
    assert argo["rules"] == [
        {"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["get", "update"]}
    ]
    argo_read = everything.one("ClusterRole", f"{RELEASE}-gitops-reverser-argocd-read-grant")
    assert argo_read["rules"] == [
        {"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["get"]}
    ]
    binding = everything.one("ClusterRoleBinding", f"{RELEASE}-gitops-reverser-argocd-read-grant")
    assert [s["name"] for s in binding["subjects"]] == [f"{RELEASE}-gitops-reverser-branch-worker"]


def test_receiver_when_enabled_scales_on_its_own() -> None:
    """O4: Service, Ingress on the host, an autoscaler instead of fixed replicas; the other
    Deployments keep theirs."""
    found = render(VALUE_SETS["external-flux"])
    assert "replicas" not in found.deployment("receiver")["spec"]
    assert found.deployment("branch-worker")["spec"]["replicas"] == 1
    ingress = found.of_kind("Ingress")[0]
    assert ingress["spec"]["rules"][0]["host"] == "hooks.example.com"
    hpa = found.of_kind("HorizontalPodAutoscaler")[0]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    fixed = render(VALUE_SETS["everything"])
    assert fixed.deployment("receiver")["spec"]["replicas"] == 3
    assert fixed.deployment("branch-worker")["spec"]["replicas"] == 3
    assert {
        p["metadata"]["name"].rsplit("-", 1)[-1] for p in fixed.of_kind("PodDisruptionBudget")
    } >= {"receiver", "worker", "dispatcher"}


def test_external_redis_keeps_the_url_in_a_secret() -> None:
    """O4: rediss:// accepted; the URL (it may hold a password) is never a plain env value."""
    found = render(VALUE_SETS["external-flux"])
    assert not found.of_kind("StatefulSet")
    for component in found.components():
        env = {e["name"]: e for e in found.container(component)["env"]}
        ref = env["GITOPS_REVERSER_REDIS_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": f"{RELEASE}-gitops-reverser-redis", "key": "url"}
    existing = render(VALUE_SETS["everything"])
    env = {e["name"]: e for e in existing.container("watcher")["env"]}
    assert env["GITOPS_REVERSER_REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "redis-url"


def test_a_sentinel_set_gives_every_process_a_sentinel_url() -> None:
    """Issue 28: an external Sentinel set; the password comes from the user's Secret through
    $(REDIS_PASSWORD) (never rendered), and the URL is one Settings accepts."""
    found = render(
        {
            "redis": {
                "builtin": False,
                "sentinel": {
                    "hosts": ["s-0.sentinel:26379", "s-1.sentinel:26379", "s-2.sentinel:26379"],
                    "service": "mymaster",
                    "db": 2,
                    "existingSecret": {"name": "valkey-auth", "key": "pw"},
                    "passwordForSentinels": True,
                },
            },
            "dashboard": {"enabled": True},
            "settings": {"redis_min_replicas": 1},
        }
    )
    assert not found.of_kind("StatefulSet")
    assert f"{RELEASE}-gitops-reverser-redis" not in found.names("Secret")
    for component in found.components():
        env = {e["name"]: e for e in found.container(component)["env"]}
        url = (
            "redis+sentinel://:$(REDIS_PASSWORD)@s-0.sentinel:26379,s-1.sentinel:26379,"
            "s-2.sentinel:26379/mymaster/2"
        )
        name = "GITOPS_REVERSER_REDIS_URL"
        if component == "dashboard":  # rq-dashboard sends the password to sentinels itself
            name = "RQ_DASHBOARD_REDIS_URL"
        else:
            url += "?sentinel_password=$(REDIS_PASSWORD)"
        assert env[name]["value"] == url
        ref = env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "valkey-auth", "key": "pw"}
        names = [e["name"] for e in found.container(component)["env"]]
        assert names.index("REDIS_PASSWORD") < names.index(name)  # expanded in order
    config = found.one("ConfigMap", f"{RELEASE}-gitops-reverser-settings")["data"]
    watcher = {e["name"]: e for e in found.container("watcher")["env"]}
    url = watcher["GITOPS_REVERSER_REDIS_URL"]["value"].replace("$(REDIS_PASSWORD)", "pw")
    settings = Settings.from_env({**config, "GITOPS_REVERSER_REDIS_URL": url})
    assert settings.redis_min_replicas == 1
    bare = render(
        {
            "redis": {
                "builtin": False,
                "sentinel": {"hosts": ["s:26379"], "service": "m", "tls": True},
            }
        }
    )
    env = {e["name"]: e for e in bare.container("watcher")["env"]}
    assert env["GITOPS_REVERSER_REDIS_URL"]["value"] == "rediss+sentinel://s:26379/m/0"
    assert "REDIS_PASSWORD" not in env


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"redis": {"builtin": False}}, "no Redis"),
        (
            {"redis": {"sentinel": {"hosts": ["s:26379"], "service": "m"}}},
            "more than one way",
        ),
        (
            {"redis": {"builtin": False, "sentinel": {"hosts": ["s:26379"]}}},
            "redis.sentinel.service",
        ),
        (
            {
                "redis": {
                    "builtin": False,
                    "sentinel": {"hosts": ["s:26379"], "service": "m", "tls": True},
                },
                "dashboard": {"enabled": True},
            },
            "rq-dashboard cannot reach a Sentinel set over TLS",
        ),
        ({"redis": {"url": "redis://elsewhere:6379/0"}}, "more than one way"),
        (
            {"receiver": {"enabled": True, "ingress": {"enabled": True}}},
            "needs receiver.ingress.host",
        ),
        ({"receiver": {"ingress": {"enabled": True, "host": "x"}}}, "needs receiver.enabled"),
    ],
)
def test_impossible_combinations_fail_with_a_message(values: dict[str, Any], says: str) -> None:
    """O4: the chart's ``fail`` guards."""
    with pytest.raises(helm.HelmRenderError, match=says):
        render(values)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"settings": {"steady_tick": "5"}}, "/settings/steady_tick"),
        ({"settings": {"redis_url": "redis://x"}}, "redis_url"),
        ({"branchWorker": {"settings": {"branch_threads": 0}}}, "branch_threads"),
        ({"redis": {"url": "http://redis:6379"}}, "/redis/url"),
        ({"redis": {"sentinel": {"hosts": ["s-0,s-1:26379"]}}}, "/redis/sentinel/hosts"),
        (
            {"watcher": {"watchedResources": [{"apiGroups": ["*"], "resources": ["pods"]}]}},
            "apiGroups",
        ),
        ({"receiver": {"replica": 2}}, "replica"),
    ],
)
def test_wrong_values_fail_at_install(values: dict[str, Any], where: str) -> None:
    """O4: values.schema.json refuses a wrong value and names where it is."""
    with pytest.raises(helm.HelmValuesError, match=where):
        render(values)


def test_schema_settings_are_the_product_settings() -> None:
    """The schema's settings are exactly Settings' fields less the ones the chart sets, so a
    new setting cannot be missed and a removed one cannot linger."""
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    offered = set(schema["properties"]["settings"]["properties"])
    chart_owned = {
        "redis_url",
        "namespace",
        "kubeconfig",
        "metrics_port",
        "key_prefix",
        "work_dir",
        "receiver_bind",
        "sops_fingerprint_secret",  # the chart generates that Secret (sops-fingerprint.yaml)
    }
    assert offered == {f.name for f in fields(Settings)} - chart_owned


def test_settings_reach_every_process_as_the_product_reads_them() -> None:
    """Values' settings become GITOPS_REVERSER_* variables that Settings.from_env accepts."""
    found = render(
        VALUE_SETS["everything"] | {"settings": {"steady_tick": "30s", "max_window": "2m"}}
    )
    config = found.one("ConfigMap", f"{RELEASE}-gitops-reverser-settings")["data"]
    for component in found.components() - {"dashboard"}:
        env = dict(config)
        for entry in found.container(component)["env"]:
            env[entry["name"]] = entry.get(
                "value", "redis://x:6379/0" if "REDIS" in entry["name"] else "ns"
            )
        settings = Settings.from_env(env)
        assert settings.steady_tick.total_seconds() == 30
        assert settings.key_prefix == "team-b:v1"
    worker = {e["name"]: e.get("value") for e in found.container("branch-worker")["env"]}
    assert worker["GITOPS_REVERSER_BRANCH_THREADS"] == "16"


def test_notes_say_what_to_do_next() -> None:
    """O4: NOTES.txt names the pods, the receiver's state and the missing grant."""
    notes = render().notes
    assert "kubectl -n gitops-reverser get pods" in notes
    assert "receiver is off" in notes and "flux.grant.enabled" in notes
    hooked = render(VALUE_SETS["external-flux"]).notes
    assert "https://hooks.example.com" in hooked and "No applier grant" not in hooked
