"""The dispatcher reads the tip of an ``ssh://`` GitProvider with the Secret's identity (D3).

Before the credentials were resolved in one place, the dispatcher's tip read passed only the
HTTP credentials of the Secret: over SSH git ran a bare ``ssh`` with no identity and no known
hosts, every attempt failed and was retried for ever. The remote here is the sandbox's fake
``ssh`` (``sandbox/githost/fake_ssh.py``), which refuses exactly what OpenSSH would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from kubernetes import client

from services.dispatcher.jobs import Context, ports
from shared.git.errors import GitPermanent
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from tests.configs import branch_config
from tests.fixtures import dispatcher_context
from tests.integration.git.ssh_support import (
    CREATED_AT,
    SshRemote,
    ssh_remote_and_cluster,
    store_secret,
)

pytestmark = pytest.mark.integration

NS = "team"


@dataclass(frozen=True, slots=True)
class Rig:
    remote: SshRemote
    ctx: Context
    core: client.CoreV1Api

    def request(self, secret_name: str) -> ApplyRequest:
        """An attempt for the remote's ``main``, its GitProvider naming ``secret_name``."""
        bk = self.ctx.configs.publish_branch(
            branch_config(self.remote.url, provider_namespace=NS, secret_name=secret_name)
        )
        return ApplyRequest(
            uuid.uuid4().hex,
            bk,
            self.remote.url,
            "main",
            self.remote.tip(),
            {"CatchUp": ["uid"]},
            ApplierRef("Kustomization", NS, "apps", "default"),
            CREATED_AT,
        )


@pytest.fixture
def rig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, key_prefix: str
) -> Iterator[Rig]:
    with ssh_remote_and_cluster(tmp_path / "ssh-host", monkeypatch) as (remote, kube):
        ctx = dispatcher_context(redis_client, key_prefix, kube.api_client(), lambda: CREATED_AT)
        core = client.CoreV1Api(kube.api_client())
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        yield Rig(remote, ctx, core)


def test_the_tip_of_an_ssh_provider_is_read_with_its_identity(rig: Rig) -> None:
    store_secret(rig.core, NS, "creds", rig.remote.secret)
    request = rig.request("creds")
    assert ports(rig.ctx).tip(request) == rig.remote.tip()
    (call,) = rig.remote.host.calls()
    assert call.verdict == "ok"
    assert "-i" in call.argv
    assert "StrictHostKeyChecking=yes" in call.argv


def test_a_missing_secret_fails_the_tip_read_with_its_name(rig: Rig) -> None:
    with pytest.raises(GitPermanent, match=f"Secret {NS}/gone not found"):
        ports(rig.ctx).tip(rig.request("gone"))
    assert rig.remote.host.calls() == []  # nothing was tried without the credentials it names
