"""A GitProvider's SSH host keys from ``spec.knownHostsRef`` and Argo CD's Secret key names
(issue 27 item 11), in each process that talks to the remote: the watcher's probe, the
dispatcher's tip read and the branch worker's credentials.

The Secret holds only Argo CD's ``sshPrivateKey``; the host keys are in a ConfigMap under Argo
CD's ``ssh_known_hosts`` key, named by the GitProvider. The remote is the sandbox's fake ``ssh``
(``sandbox/githost/fake_ssh.py``), which, like OpenSSH, refuses a host whose key is not in the
known hosts it is given: without the ConfigMap, SSH fails closed and nothing is tried.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from kubernetes import client

from services.branch_worker.credentials import SecretCredentials
from services.dispatcher.jobs import Context, ports
from services.watcher.probe import Prober
from services.watcher.providers import KNOWN_HOSTS_NOT_FOUND, provider_problems
from shared.git.credentials import KnownHostsMissing
from shared.git.remote import ls_remote
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.model.config import ApplierRef
from shared.model.crds import GitProviderView, parse_git_provider
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from tests.configs import branch_config
from tests.integration.git.ssh_support import (
    CREATED_AT,
    KEY,
    SshRemote,
    ssh_remote_and_cluster,
    store_secret,
)

pytestmark = pytest.mark.integration

NS = "team"
HOSTS = "ConfigMap/ssh-known-hosts"


@dataclass(frozen=True, slots=True)
class Rig:
    remote: SshRemote
    core: client.CoreV1Api
    reader: CrdReader
    ctx: Context
    configs: ConfigStore

    def provider(self) -> GitProviderView:
        return parse_git_provider(
            {
                "metadata": {"name": "gp", "namespace": NS, "uid": "u1", "generation": 1},
                "spec": {
                    "url": self.remote.url,
                    "allowedBranches": ["main"],
                    "secretRef": {"name": "argo-style"},
                    "knownHostsRef": {"name": "ssh-known-hosts"},
                },
            }
        )

    def publish_hosts(self) -> None:
        self.core.create_namespaced_config_map(
            NS,
            client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="ssh-known-hosts"),
                data={"ssh_known_hosts": self.remote.host.known_hosts.decode()},
            ),
        )


@pytest.fixture
def rig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, key_prefix: str
) -> Iterator[Rig]:
    with ssh_remote_and_cluster(tmp_path / "ssh-host", monkeypatch) as (remote, kube):
        core = client.CoreV1Api(kube.api_client())
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        store_secret(core, NS, "argo-style", {"sshPrivateKey": KEY})
        settings = Settings(
            redis_url=Settings.from_env().redis_url,
            key_prefix=key_prefix,
            apply_queue=f"{key_prefix}-q",
        )
        clusters = ClientFactory(settings, lambda: CREATED_AT, local=kube.api_client())
        ctx = Context.build(settings, redis_client, clusters)
        reader = CrdReader(KubeClient(kube.api_client(), "local"))
        yield Rig(remote, core, reader, ctx, ConfigStore(redis_client, Keys(key_prefix)))


def test_the_parsed_provider_names_a_configmap_unless_it_says_secret() -> None:
    spec = {"url": "ssh://git@h/r.git", "knownHostsRef": {"kind": "Secret", "name": "k"}}
    assert parse_git_provider({"spec": spec}).known_hosts_ref == "Secret/k"
    spec["knownHostsRef"] = {"name": "k"}
    assert parse_git_provider({"spec": spec}).known_hosts_ref == "ConfigMap/k"
    assert parse_git_provider({"spec": {"url": "x"}}).known_hosts_ref == ""


def test_without_the_configmap_the_probe_fails_closed_and_tries_nothing(rig: Rig) -> None:
    (problem,) = provider_problems(rig.provider(), rig.reader, Prober(clock=lambda: CREATED_AT))
    assert problem.reason == KNOWN_HOSTS_NOT_FOUND
    assert f"ConfigMap {NS}/ssh-known-hosts" in problem.message
    assert not problem.permanent  # creating the ConfigMap fixes it, no spec change needed
    assert rig.remote.host.calls() == []


def test_the_watchers_probe_trusts_the_configmaps_host_keys(rig: Rig) -> None:
    rig.publish_hosts()
    assert provider_problems(rig.provider(), rig.reader, Prober(clock=lambda: CREATED_AT)) == []
    (call,) = rig.remote.host.calls()
    assert call.verdict == "ok"
    assert "StrictHostKeyChecking=yes" in call.argv


def test_the_dispatchers_tip_read_uses_them(rig: Rig) -> None:
    bk = rig.configs.publish_branch(
        branch_config(rig.remote.url, provider_namespace=NS, secret_name="argo-style",
                      known_hosts=HOSTS)
    )  # fmt: skip
    request = ApplyRequest(
        uuid.uuid4().hex, bk, rig.remote.url, "main", rig.remote.tip(), {"CatchUp": ["uid"]},
        ApplierRef("Kustomization", NS, "apps", "default"), CREATED_AT,
    )  # fmt: skip
    with pytest.raises(KnownHostsMissing):
        ports(rig.ctx).tip(request)
    assert rig.remote.host.calls() == []
    rig.publish_hosts()
    assert ports(rig.ctx).tip(request) == rig.remote.tip()
    assert [call.verdict for call in rig.remote.host.calls()] == ["ok"]


def test_the_branch_workers_credentials_use_them(rig: Rig, tmp_path: Path) -> None:
    credentials = SecretCredentials(lambda: rig.reader, rig.configs, tmp_path / "ssh")
    bk = rig.configs.publish_branch(
        branch_config(rig.remote.url, provider_namespace=NS, secret_name="argo-style",
                      known_hosts=HOSTS)
    )  # fmt: skip
    assert credentials(bk) == {}  # no host keys: nothing to push with (retried later)
    rig.publish_hosts()
    env = credentials(bk)
    assert (tmp_path / "ssh" / bk / "known_hosts").read_bytes() == rig.remote.host.known_hosts
    assert ls_remote(rig.remote.url, "main", env) == rig.remote.tip()
