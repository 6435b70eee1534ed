"""The rendered chart run against the sandbox, process by process, as a cluster would run it.

``ChartRun`` takes a render and:

- turns its RBAC into the API server double's access rules (``access_rules``): a
  ClusterRoleBinding's rules hold in every namespace, a RoleBinding's in its own; each
  ServiceAccount becomes the user ``system:serviceaccount:<ns>:<name>`` with a token of its own;
- creates the rendered ServiceAccounts, Roles, RoleBindings, ConfigMaps and Secrets in the API
  (the double serves no ClusterRole kinds: those exist only as access rules);
- starts each Deployment's container as a local process with exactly its rendered command and
  environment (``$(VAR)`` expanded as the kubelet does), the Secrets and ConfigMaps it names
  read back from the API, and its ServiceAccount's token in a kubeconfig
  (``GITOPS_REVERSER_KUBECONFIG`` stands for the token the kubelet mounts); each volume mount
  is a local folder, and a variable or argument naming a mount path names that folder; a pod's
  init containers run the same way, to completion (``run_init``);
- applies a later render over the installed objects (``apply``), as a GitOps tool syncs;
- records every request the API decided and the rule that allowed it (``Audit``), so a test
  sees both a permission that is missing and one that is never used.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, utils

from sandbox.flux import FluxControllers
from sandbox.githost import GitHost
from sandbox.kube.access import Access, AccessRule, Attributes
from sandbox.kube.server import KubeApiServer
from sandbox.paths import REPO_ROOT, all_crd_files
from tests.integration.chart.render import Obj, Rendered

ADMIN = "admin"
#: What each console script runs until the image's entry points are installed in the venv
#: (``gitops-reverser-*`` from pyproject; the Procfile's commands meanwhile). One place to switch.
FALLBACK = {
    "gitops-reverser-watcher": [sys.executable, "-m", "services.watcher"],
    "gitops-reverser-branch-worker": [sys.executable, "-m", "services.branch_worker"],
    "gitops-reverser-dispatcher": [sys.executable, "-m", "services.dispatcher"],
    "gitops-reverser-receiver": [
        str(Path(sys.executable).parent / "gunicorn"),
        "-c",
        "services/receiver/gunicorn.conf.py",
        "services.receiver.app:create_app()",
    ],
}
#: How long a process may take to finish the work in hand after SIGTERM.
STOP_S = 30.0
#: How long an init container may take to finish.
INIT_S = 60.0
#: The kinds ``install`` and ``apply`` write (the double serves these; RBAC kinds that are
#: cluster-wide exist only as access rules).
INSTALLED = ("ServiceAccount", "ConfigMap", "Secret", "Role", "RoleBinding")
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def command_line(command: list[str]) -> list[str]:
    """The rendered command, run from the venv's console scripts (or their fallback)."""
    script = Path(sys.executable).parent / command[0]
    if script.exists():
        return [str(script), *command[1:]]
    return [*FALLBACK[command[0]], *command[1:]]


def user_of(namespace: str, account: str) -> str:
    return f"system:serviceaccount:{namespace}:{account}"


def access_rules(rendered: Rendered) -> list[AccessRule]:
    """The rendered RBAC as the double's rules (resourceNames and wildcards are refused)."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["rules"]
        for o in rendered
        if o["kind"] in ("Role", "ClusterRole")
    }
    found: list[AccessRule] = []
    for binding in rendered.of_kind("ClusterRoleBinding") + rendered.of_kind("RoleBinding"):
        ref = binding["roleRef"]
        where = binding["metadata"].get("namespace", "")
        role_ns = where if ref["kind"] == "Role" else ""
        for rule in roles[(ref["kind"], role_ns, ref["name"])]:
            assert "resourceNames" not in rule, "the double cannot check resourceNames"
            for subject in binding["subjects"]:
                user = user_of(subject["namespace"], subject["name"])
                found.append(
                    AccessRule(
                        user,
                        tuple(rule["verbs"]),
                        tuple(rule["apiGroups"]),
                        tuple(rule["resources"]),
                        (where,) if where else (),
                    )
                )
    return found


@dataclass(frozen=True, slots=True)
class Decision:
    attrs: Attributes
    allowed: bool


class Audit:
    """Every request the API server double authorized or refused, in order."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self._lock = threading.Lock()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Record each ``Access.check`` (real requests; access reviews are not uses)."""
        original = Access.check
        audit = self

        def check(access: Access, attrs: Attributes) -> None:
            allowed = access.allowed(attrs)
            with audit._lock:
                audit.decisions.append(Decision(attrs, allowed))
            original(access, attrs)

        monkeypatch.setattr(Access, "check", check)

    def denied(self, user: str) -> list[Attributes]:
        with self._lock:
            return [d.attrs for d in self.decisions if d.attrs.user == user and not d.allowed]

    def unused(self, rules: list[AccessRule]) -> set[tuple[str, str, str, str]]:
        """(user, verb, group, resource) granted by ``rules`` that no allowed request used."""
        with self._lock:
            used = {
                (d.attrs.user, d.attrs.verb, d.attrs.group, d.attrs.full_resource)
                for d in self.decisions
                if d.allowed
            }
        granted = {
            (r.user, verb, group, resource)
            for r in rules
            for verb in r.verbs
            for group in r.api_groups
            for resource in r.resources
        }
        return granted - used


@dataclass
class ChartRun:
    """A sandbox whose access rules are the chart's, and the chart's processes on it."""

    directory: Path
    rendered: Rendered
    namespace: str
    rules: list[AccessRule]
    audit: Audit
    kube: KubeApiServer = field(init=False)
    githost: GitHost = field(init=False)
    flux: FluxControllers = field(init=False)
    tokens: dict[str, str] = field(init=False)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        accounts = [o["metadata"]["name"] for o in self.rendered.of_kind("ServiceAccount")]
        self.tokens = {user_of(self.namespace, a): uuid.uuid4().hex for a in accounts}
        self.tokens[ADMIN] = uuid.uuid4().hex
        everything = AccessRule(ADMIN, ("*",), ("*",), ("*",))
        by_token = {token: user for user, token in self.tokens.items()}
        self.kube = KubeApiServer(all_crd_files(), tokens=by_token, rules=[everything, *self.rules])
        self.kube.start()
        self.githost = GitHost(self.directory / "git")
        self.githost.start()
        self.flux = FluxControllers(self.api, self.directory / "flux")
        self.flux.start()

    @property
    def api(self) -> client.ApiClient:
        return self.kube.api_client(self.tokens[ADMIN])

    def install(self) -> None:
        """The release's namespace and the rendered objects the double serves."""
        core = client.CoreV1Api(self.api)
        namespaces = {self.namespace} | {
            o["metadata"]["namespace"] for o in self.rendered if o["kind"] == "RoleBinding"
        }
        for name in sorted(namespaces):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        for obj in self.rendered:
            if obj["kind"] in INSTALLED:
                utils.create_from_dict(self.api, obj, namespace=obj["metadata"].get("namespace"))

    def apply(self, rendered: Rendered) -> None:
        """A later render applied over the installed objects (created or replaced whole)."""
        core, rbac = client.CoreV1Api(self.api), client.RbacAuthorizationV1Api(self.api)
        replace = {
            "ServiceAccount": core.replace_namespaced_service_account,
            "ConfigMap": core.replace_namespaced_config_map,
            "Secret": core.replace_namespaced_secret,
            "Role": rbac.replace_namespaced_role,
            "RoleBinding": rbac.replace_namespaced_role_binding,
        }
        for obj in rendered:
            if obj["kind"] not in INSTALLED:
                continue
            meta = obj["metadata"]
            try:
                utils.create_from_dict(self.api, obj, namespace=meta.get("namespace"))
            except utils.FailToCreateError:
                replace[obj["kind"]](meta["name"], meta["namespace"], obj)

    def home(self, name: str) -> Path:
        """The local folder standing for the pod ``name``'s volumes."""
        return self.directory / name

    def start(self, component: str) -> None:
        """Start one Deployment's container as a local process."""
        pod = self.rendered.deployment(component)["spec"]["template"]["spec"]
        log = (self.directory / f"{component}.log").open("ab")
        self.procs[component] = self._popen(component, pod, pod["containers"][0], log)

    def run_init(self, kind: str, name: str) -> None:
        """Run the init containers of the rendered ``kind`` ``name`` in order, each to exit 0
        (as the kubelet does before the pod's containers start)."""
        pod = self.rendered.one(kind, name)["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []):
            path = self.directory / f"{name}-{container['name']}.log"
            with path.open("ab") as log:
                proc = self._popen(name, pod, container, log)
                code = proc.wait(timeout=INIT_S)
            assert code == 0, f"init container {container['name']}: {path.read_text()}"

    def _popen(self, name: str, pod: Obj, container: Obj, log: Any) -> subprocess.Popen[bytes]:
        home = self.home(name)
        mounts = {m["mountPath"]: home / m["name"] for m in container.get("volumeMounts", [])}
        for folder in mounts.values():
            folder.mkdir(parents=True, exist_ok=True)
        kubeconfig = home / "kubeconfig"
        token = self.tokens[user_of(self.namespace, pod["serviceAccountName"])]
        self.kube.write_kubeconfig(kubeconfig, token=token, context="in-cluster")
        env = {
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "PYTHONDONTWRITEBYTECODE": "1",
            **{k: _local(v, mounts) for k, v in self.environment(container).items()},
            "GITOPS_REVERSER_KUBECONFIG": str(kubeconfig),
        }
        args = [_local(a, mounts) for a in container.get("args", [])]
        return subprocess.Popen(
            command_line(container["command"]) + args,
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self, component: str) -> str:
        return (self.directory / f"{component}.log").read_text(errors="replace")

    def environment(self, container: Obj) -> dict[str, str]:
        core = client.CoreV1Api(self.api)
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            name = source["configMapRef"]["name"]
            env |= core.read_namespaced_config_map(name, self.namespace).data or {}
        for entry in container.get("env", []):
            env[entry["name"]] = self._value(entry, env)
        return env

    def _value(self, entry: Obj, earlier: dict[str, str]) -> str:
        if "value" in entry:
            # $(NAME) names a variable defined before it, as the kubelet expands it
            return _REFERENCE.sub(lambda m: earlier.get(m[1], m[0]), str(entry["value"]))
        source = entry["valueFrom"]
        if "fieldRef" in source:
            assert source["fieldRef"]["fieldPath"] == "metadata.namespace"
            return self.namespace
        ref = source["secretKeyRef"]
        secret = client.CoreV1Api(self.api).read_namespaced_secret(ref["name"], self.namespace)
        return base64.b64decode(secret.data[ref["key"]]).decode()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.flux.stopping()
        self.githost.stop()
        self.kube.stop()
        self.flux.stop()


def _local(value: str, mounts: dict[str, Path]) -> str:
    """A value naming a mount path (or below it) names the local folder instead."""
    for path, folder in mounts.items():
        if value == path or value.startswith(path + "/"):
            return str(folder) + value[len(path) :]
    return value


def running(
    directory: Path, rendered: Rendered, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ChartRun]:
    """A ChartRun with its objects installed; stopped afterwards."""
    audit = Audit()
    audit.install(monkeypatch)
    run = ChartRun(directory, rendered, namespace, access_rules(rendered), audit)
    try:
        run.install()
        yield run
    finally:
        run.stop()
