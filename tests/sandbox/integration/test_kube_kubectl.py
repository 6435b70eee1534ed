"""kubectl 1.32 against the Kubernetes API double: create, apply, edit, get, delete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.kube.server import AccessRule, KubeApiServer
from tests.sandbox.integration.kube_http import KUBECTL as KUBECTL_BIN
from tests.sandbox.integration.kube_http import Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path(KUBECTL_BIN).exists(), reason="kubectl is not installed"),
]

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  namespace: default
data:
  a: "1"
"""
GIT_REPOSITORY = """apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: repo
  namespace: default
spec:
  url: https://example.com/repo.git
  interval: 1m
"""


def _ok(result: object) -> str:
    assert getattr(result, "returncode", None) == 0, getattr(result, "stderr", "")
    assert getattr(result, "stderr", None) == "", getattr(result, "stderr", "")
    return str(getattr(result, "stdout", ""))


def test_create_get_and_delete(kubectl: Kubectl) -> None:
    """kubectl create -f, get (server-side Table with DATA), delete, all without stderr.

    Fact: kubernetes/kubernetes pkg/printers/internalversion/printers.go (ConfigMap columns
    Name, Data, Age); kubectl asks Accept application/json;as=Table;v=v1;g=meta.k8s.io.
    """
    assert "configmap/demo created" in _ok(kubectl("create", "-f", "-", stdin=CONFIGMAP))
    table = _ok(kubectl("get", "configmaps"))
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "DATA", "AGE"]
    assert row.split()[:2] == ["demo", "1"]
    assert 'configmap "demo" deleted' in _ok(kubectl("delete", "configmap", "demo"))
    assert "No resources found" in kubectl("get", "configmaps").stderr


def test_apply_twice_then_change(kubectl: Kubectl) -> None:
    """Client-side apply creates, is unchanged when re-run, and configures a change.

    Fact: kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/ (apply
    creates, then patches with the last-applied-configuration annotation); custom resources
    get JSON merge patches (kubectl apply patcher falls back when the kind is not built in).
    """
    assert "created" in _ok(kubectl("apply", "-f", "-", stdin=GIT_REPOSITORY))
    assert "unchanged" in _ok(kubectl("apply", "-f", "-", stdin=GIT_REPOSITORY))
    changed = GIT_REPOSITORY.replace("interval: 1m", "interval: 2m")
    assert "configured" in _ok(kubectl("apply", "-f", "-", stdin=changed))
    interval = _ok(kubectl("get", "gitrepository", "repo", "-o", "jsonpath={.spec.interval}"))
    assert interval == "2m"
    assert "created" in _ok(kubectl("apply", "-f", "-", stdin=CONFIGMAP))
    assert "configured" in _ok(kubectl("apply", "-f", "-", stdin=CONFIGMAP.replace('"1"', '"2"')))


def test_server_side_apply_and_edit(kubectl: Kubectl, tmp_path: Path) -> None:
    """kubectl apply --server-side and kubectl edit (editor run as a script) both work.

    Fact: kubernetes.io/docs/reference/using-api/server-side-apply/ (kubectl apply
    --server-side, manager "kubectl"); kubectl edit sends a patch computed from the edit.
    """
    _ok(kubectl("apply", "--server-side", "-f", "-", stdin=GIT_REPOSITORY))
    managers = _ok(
        kubectl(
            "get",
            "gitrepository",
            "repo",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        )
    )
    assert "kubectl" in managers
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('interval: 1m', 'interval: 7m'))\n"
    )
    env = {**os.environ, "KUBE_EDITOR": f"{sys.executable} {editor}"}
    assert "edited" in _ok(kubectl("edit", "gitrepository", "repo", env=env))
    generation = _ok(
        kubectl(
            "get", "gitrepository", "repo", "-o", "jsonpath={.spec.interval} {.metadata.generation}"
        )
    )
    assert generation == "7m 2"


def test_crd_printer_columns_across_namespaces(kubectl: Kubectl, kube: KubeApiServer) -> None:
    """`kubectl get gitrepositories -A` prints the CRD's additionalPrinterColumns.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
    customresource/tableconvertor/tableconvertor.go (Name, then the CRD's columns; date
    columns as ages) and the GitRepository CRD's columns URL, Age, Ready, Status.
    """
    _ok(kubectl("apply", "-f", "-", stdin=GIT_REPOSITORY))
    table = _ok(kubectl("get", "gitrepositories", "-A"))
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAMESPACE", "NAME", "URL", "AGE", "READY", "STATUS"]
    assert row.split()[:3] == ["default", "repo", "https://example.com/repo.git"]


def test_auth_can_i_uses_self_subject_access_review(kubectl: Kubectl) -> None:
    """kubectl auth can-i posts a SelfSubjectAccessReview; with no rules the answer is yes.

    Fact: kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access
    (kubectl auth can-i uses SelfSubjectAccessReview).
    """
    result = kubectl("auth", "can-i", "create", "configmaps")
    assert result.returncode == 0 and result.stdout.strip() == "yes"


def test_kubectl_over_http_sends_no_token(tmp_path: Path) -> None:
    """kubectl drops a kubeconfig token on a plain-http server: it acts as system:anonymous.

    Fact: kubernetes/kubectl issue #744 ("kubectl does not send Authorization header ... over
    plain HTTP"; clientcmd sets the bearer token only for TLS connections, per liggitt in
    kubernetes/kubernetes PR #95277). The rules then judge the anonymous user, as a real
    server with anonymous auth would, worded by responsewriters forbiddenMessage.
    """
    rules = [AccessRule("viewer", ("get", "list", "watch"), ("",), ("configmaps",), ("default",))]
    server = KubeApiServer(tokens={"t0k": "viewer"}, rules=rules)
    server.start()
    try:
        config = tmp_path / "kubeconfig"
        server.write_kubeconfig(config, token="t0k")
        base = [KUBECTL_BIN, "--kubeconfig", str(config), "--cache-dir", str(tmp_path)]
        listed = subprocess.run(
            [*base, "get", "configmaps"], capture_output=True, text=True, timeout=60, check=False
        )
        assert listed.returncode == 1
        assert (
            'configmaps is forbidden: User "system:anonymous" cannot list resource '
            '"configmaps" in API group "" in the namespace "default"'
        ) in listed.stderr
    finally:
        server.stop()


def test_imperative_creates_send_protobuf(kubectl: Kubectl) -> None:
    """kubectl create configmap/secret/namespace/deployment/role/rolebinding work.

    Fact: kubectl's typed clients post application/vnd.kubernetes.protobuf (seen with -v=9)
    in the apimachinery envelope (runtime/serializer/protobuf, magic "k8s\\x00"), with the
    k8s.io/api generated.proto field numbers.
    """
    _ok(kubectl("create", "namespace", "team"))
    _ok(kubectl("create", "configmap", "settings", "-n", "team", "--from-literal=a=b"))
    _ok(kubectl("create", "secret", "generic", "creds", "-n", "team", "--from-literal=p=q"))
    _ok(kubectl("create", "deployment", "web", "-n", "team", "--image=nginx:1.27"))
    _ok(kubectl("create", "role", "reader", "-n", "team", "--verb=get", "--resource=configmaps"))
    _ok(kubectl("create", "rolebinding", "rb", "-n", "team", "--role=reader", "--user=u"))
    assert _ok(kubectl("get", "cm", "settings", "-n", "team", "-o", "jsonpath={.data.a}")) == "b"
    assert (
        _ok(kubectl("get", "secret", "creds", "-n", "team", "-o", "jsonpath={.data.p}")) == "cQ=="
    )
    image = _ok(
        kubectl(
            "get",
            "deploy",
            "web",
            "-n",
            "team",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        )
    )
    assert image == "nginx:1.27"
    assert (
        _ok(kubectl("get", "rolebinding", "rb", "-n", "team", "-o", "jsonpath={.roleRef.name}"))
        == "reader"
    )


def test_get_watch_prints_new_objects(
    kubectl: Kubectl, kube: KubeApiServer, tmp_path: Path
) -> None:
    """`kubectl get -w` lists, then prints each change as a Table row from the watch.

    Fact: kubectl get --watch sends watch=true with Accept as=Table (meta.k8s.io/v1) and the
    list's resourceVersion; kubernetes.io/docs/reference/kubectl/generated/kubectl_get/.
    """
    _ok(kubectl("create", "configmap", "first"))
    config = tmp_path / "kubeconfig"
    command = [
        "timeout",
        "20",
        KUBECTL_BIN,
        "--kubeconfig",
        str(config),
        "--cache-dir",
        str(tmp_path / "cache"),
        "get",
        "configmaps",
        "--watch",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().split()[:2] == ["NAME", "DATA"]
        assert proc.stdout.readline().split()[0] == "first"
        _ok(kubectl("create", "configmap", "second"))
        assert proc.stdout.readline().split()[0] == "second"
        proc.terminate()
