"""A branch of an ``ssh://`` GitProvider is fetched and pushed with its Secret's identity (D3, R5).

The Secret is read through the Kubernetes API when the branch is taken and resolved by the
shared resolver (``shared.git.credentials``); the remote is the sandbox's fake ``ssh``.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from kubernetes import client

from services.branch_worker.credentials import SecretCredentials
from shared.git.workspace import Committer, Workspace
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.ids import BranchKey
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from tests.configs import branch_config
from tests.integration.git.ssh_support import (
    KEY,
    SshRemote,
    ssh_remote_and_cluster,
    store_secret,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True, slots=True)
class Rig:
    remote: SshRemote
    configs: ConfigStore
    credentials: SecretCredentials
    core: client.CoreV1Api

    def branch(self, secret_name: str) -> BranchKey:
        return self.configs.publish_branch(
            branch_config(self.remote.url, provider_namespace="default", secret_name=secret_name)
        )


@pytest.fixture
def rig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, key_prefix: str
) -> Iterator[Rig]:
    with ssh_remote_and_cluster(tmp_path / "ssh-host", monkeypatch) as (remote, kube):
        configs = ConfigStore(redis_client, Keys(key_prefix))
        reader = CrdReader(KubeClient(kube.api_client(), "local"))
        credentials = SecretCredentials(lambda: reader, configs, tmp_path / "ssh")
        yield Rig(remote, configs, credentials, client.CoreV1Api(kube.api_client()))


def test_the_owner_fetches_and_pushes_with_the_secrets_identity(
    rig: Rig, tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    store_secret(rig.core, "default", "deploy-key", rig.remote.secret)
    bk = rig.branch("deploy-key")
    env = rig.credentials(bk)
    folder = tmp_path / "ssh" / bk
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / "identity").read_bytes() == KEY
    stored = redis_client.hgetall(Keys(key_prefix).branch_meta(bk))
    assert "PRIVATE KEY" not in str(stored)
    assert "PRIVATE KEY" not in str(env)
    ws = Workspace(tmp_path / "ws", rig.remote.url, "main", env=env)
    tip = ws.fetch()
    ws.reset(tip)
    ws.write("apps/b.yaml", b"b: 2\n")
    ws.commit("over ssh", Committer("t", "t@x"))
    assert ws.push(tip).pushed
    assert rig.remote.tip() == ws.head()
    assert {call.verdict for call in rig.remote.host.calls()} == {"ok"}


def test_a_missing_secret_leaves_the_branch_without_credentials(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    bk = rig.branch("not-there")
    with caplog.at_level(logging.WARNING):
        assert rig.credentials(bk) == {}
    assert "Secret default/not-there not found" in caplog.text


def test_the_key_goes_with_its_secret_and_the_process_folder_at_exit(
    rig: Rig, tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """T3 (the reliability probe's SSH finding): no SSH key outlives its Secret, and none
    outlives the process."""
    store_secret(rig.core, "default", "deploy-key", rig.remote.secret)
    bk = rig.branch("deploy-key")
    rig.credentials(bk)
    assert (tmp_path / "ssh" / bk / "identity").exists()
    rig.core.delete_namespaced_secret("deploy-key", "default")
    assert rig.credentials(bk) == {}
    assert not (tmp_path / "ssh" / bk).exists(), "the key went with its Secret"

    own = SecretCredentials(rig.credentials._reader, ConfigStore(redis_client, Keys(key_prefix)))
    store_secret(rig.core, "default", "deploy-key", rig.remote.secret)
    assert own(bk)
    folder = own._ssh_dir
    assert folder.name.startswith("gitops-reverser-ssh-") and (folder / bk / "identity").exists()
    own.close()
    assert not folder.exists(), "the process's folder is removed at exit"
