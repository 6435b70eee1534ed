"""A branch's git credentials come from its GitProvider's Secret, never from Redis (R5)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from kubernetes import client

from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from services.branch_worker.credentials import SecretCredentials
from shared.git.errors import GitPermanent
from shared.git.remote import ls_remote
from shared.git.workspace import Workspace
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from tests.configs import DEFAULT_COMMITTER, branch_config
from tests.integration.git.tls_support import PASSWORD, USER, https_host, make_ca

pytestmark = pytest.mark.integration


def test_the_owner_pushes_with_the_secrets_basic_credentials(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    host = GitHost(tmp_path / "git", auth=("bot", "s3cret"))
    host.start()
    kube = KubeApiServer()
    kube.start()
    try:
        url = host.create_repo("team/locked", files={"README.md": b"x\n"})
        client.CoreV1Api(kube.api_client()).create_namespaced_secret(
            "default",
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="creds"),
                string_data={"username": "bot", "password": "s3cret"},
            ),
        )
        configs = ConfigStore(redis_client, Keys(key_prefix))
        bk = configs.publish_branch(branch_config(url, "main", "default", "gp", "creds"))
        reader = CrdReader(KubeClient(kube.api_client(), "local"))
        env = SecretCredentials(lambda: reader, configs, tmp_path / "ssh")(bk)
        assert "s3cret" not in str(redis_client.hgetall(Keys(key_prefix).branch_meta(bk)))
        ws = Workspace(tmp_path / "ws", url, "main", env=env)
        ws.reset(ws.fetch())
        ws.write("a.yaml", b"a: 1\n")
        ws.commit("with credentials", DEFAULT_COMMITTER)
        assert ws.push(ls_remote(url, "main", env)).pushed
        with pytest.raises(GitPermanent):
            ls_remote(url, "main")
    finally:
        kube.stop()
        host.stop()


def test_the_owner_pushes_to_a_host_behind_the_secrets_private_ca(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """Issue 24 item 6: ``ca.crt`` in the GitProvider's Secret is trusted for HTTPS; the file
    stays for later calls while the Secret holds it and goes when the Secret no longer does."""
    ca = make_ca(tmp_path / "ca")
    kube = KubeApiServer()
    kube.start()
    try:
        with https_host(tmp_path, ca) as host:
            url = host.repo_url("team/private")
            core = client.CoreV1Api(kube.api_client())
            secret = client.V1Secret(
                metadata=client.V1ObjectMeta(name="creds"),
                string_data={"username": USER, "password": PASSWORD, "ca.crt": ca.ca_pem.decode()},
            )
            core.create_namespaced_secret("default", secret)
            configs = ConfigStore(redis_client, Keys(key_prefix))
            bk = configs.publish_branch(branch_config(url, "main", "default", "gp", "creds"))
            reader = CrdReader(KubeClient(kube.api_client(), "local"))
            credentials = SecretCredentials(lambda: reader, configs, tmp_path / "files")
            env = credentials(bk)
            ws = Workspace(tmp_path / "ws", url, "main", env=env)
            ws.reset(ws.fetch())
            ws.write("a.yaml", b"a: 1\n")
            ws.commit("through a private CA", DEFAULT_COMMITTER)
            assert ws.push(ls_remote(url, "main", env)).pushed
            assert (tmp_path / "files" / bk / "ca.crt").read_bytes() == ca.ca_pem

            secret.string_data = {"username": USER, "password": PASSWORD}
            core.replace_namespaced_secret("creds", "default", secret)
            assert "GIT_SSL_CAINFO" not in credentials(bk)
            assert not (tmp_path / "files" / bk).exists()
    finally:
        kube.stop()
