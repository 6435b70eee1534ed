"""Boundary rules of the adapters: API errors classified once (conventions.md 5), git
credentials passed without putting them in the URL, and kubeconfigs that could run programs
or read our files refused (facts/upstream-gitops-reverser.md §2.5: KubeConfigExecNotAllowed,
KubeConfigFileReferenceNotAllowed)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from shared.git.auth import http_auth_env, ssh_env
from shared.kube.clients import kubeconfig_problem
from shared.kube.errors import (
    Conflict,
    Expired,
    KubePermanent,
    KubeTemporary,
    NotFound,
    classify,
)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (410, Expired),
        (404, NotFound),
        (403, KubePermanent),
        (422, KubePermanent),
        (409, Conflict),
        (429, KubeTemporary),
        (500, KubeTemporary),
        (503, KubeTemporary),
        (0, KubeTemporary),
    ],
)
def test_api_errors_are_classified(status: int, kind: type[Exception]) -> None:
    error = classify(ApiException(status=status, reason="r"))
    assert type(error) is kind
    assert error.code == status


def test_http_credentials_become_an_extra_header() -> None:
    env = http_auth_env({"username": b"bot", "password": b"s3cret"})
    expected = base64.b64encode(b"bot:s3cret").decode()
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert env["GIT_CONFIG_VALUE_0"] == f"Authorization: Basic {expected}"
    bearer = http_auth_env({"bearerToken": b"tok\n"})
    assert bearer["GIT_CONFIG_VALUE_0"] == "Authorization: Bearer tok"
    assert http_auth_env({}) == {}


def test_ssh_identity_is_written_privately(tmp_path: Path) -> None:
    env = ssh_env({"identity": b"KEY", "known_hosts": b"host key"}, tmp_path)
    assert (tmp_path / "identity").read_bytes() == b"KEY"
    assert oct((tmp_path / "identity").stat().st_mode & 0o777) == "0o600"
    assert "StrictHostKeyChecking=yes" in env["GIT_SSH_COMMAND"]
    assert ssh_env({}, tmp_path) == {}


def test_kubeconfigs_that_exec_or_name_files_are_refused() -> None:
    plain = {
        "clusters": [{"name": "c", "cluster": {"server": "https://x"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    assert kubeconfig_problem(plain) is None
    exec_user = {"users": [{"name": "u", "user": {"exec": {"command": "sh"}}}]}
    refused = kubeconfig_problem(exec_user)
    assert refused is not None and refused.reason == "KubeConfigExecNotAllowed"
    files = {"clusters": [{"name": "c", "cluster": {"certificate-authority": "/etc/ca"}}]}
    refused = kubeconfig_problem(files)
    assert refused is not None and refused.reason == "KubeConfigFileReferenceNotAllowed"
