"""One attempt to a webhook applier (D7) against the sandbox's webhook sink, real Redis, the
API double and the Git host: a 2xx is Delivered with a body the sink verified by the published
signature rule; a 500 or a hang past the timeout is Failed with the status or the timeout; the
HMAC key is read only from the GitTarget's namespace; a moved tip sends nothing (D3); and the
ApplierConfigured check (S2) reads the same Secret through the same client."""

from __future__ import annotations

import base64
import dataclasses
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from kubernetes import client

from sandbox import manifests as m
from sandbox.githost import GitHost
from sandbox.githost.outside import OutsideClone
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from sandbox.webhook_sink import WebhookSink
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import Context, finish, ports
from shared.appliers import for_kind
from shared.decide.applier_check import Subject
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.ids import Branch, GitTargetUid
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.keys import Keys
from shared.store.leases import Leases
from tests.configs import branch_config
from tests.fixtures import dispatcher_context

pytestmark = pytest.mark.integration

NS = "team"
OTHER = "elsewhere"
KEY = b"a-shared-hmac-key"


@dataclass
class World:
    kube: KubeApiServer
    url: str
    clone: OutsideClone
    ctx: Context
    core: client.CoreV1Api
    redis: redis.Redis
    key_prefix: str
    sink: WebhookSink

    def push(self, text: str) -> str:
        self.clone.write({"apps/cm.yaml": text})
        commit = self.clone.commit("outside edit")
        self.clone.push("main")
        return commit

    def quiet(self, tip: str) -> None:
        lease = Leases(self.redis, Keys(self.key_prefix), 60_000).acquire(
            Branch(self.url, "main").key, "t"
        )
        assert lease is not None
        self.ctx.states.publish_takeover(lease, tip, released=())

    def request(self, commit: str, uid: str, reason: str = "ForeignCommit") -> ApplyRequest:
        view = next(t for t in CrdReader(self.local()).git_targets() if t.meta.uid == uid)
        assert view.applier is not None and view.webhook is not None
        return ApplyRequest(
            uuid.uuid4().hex,
            Branch(self.url, "main").key,
            self.url,
            "main",
            commit,
            {reason: [uid]},  # type: ignore[dict-item]
            view.applier,
            time.time(),
            view.webhook,
        )

    def local(self) -> KubeClient:
        return self.ctx.clusters.local().client

    def run(self, request: ApplyRequest) -> AttemptOutcome:
        wired = dataclasses.replace(ports(self.ctx), handled_timeout_s=5.0)
        outcome = attempts.run(request, wired)
        finish(self.ctx, request, outcome)
        return outcome

    def secret(self, namespace: str, data: dict[str, bytes]) -> None:
        encoded = {k: base64.b64encode(v).decode() for k, v in data.items()}
        body = client.V1Secret(metadata=client.V1ObjectMeta(name="hook-key"), data=encoded)
        self.core.create_namespaced_secret(namespace, body)


@pytest.fixture
def world(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[World]:
    kube = KubeApiServer(all_crd_files(), bookmark_interval=0.2)
    kube.start()
    host = GitHost(tmp_path / "git")
    host.start()
    url = host.create_repo("apps", files={"apps/cm.yaml": b"v: 1\n"})
    sink = WebhookSink(KEY).start()
    api = kube.api_client()
    core = client.CoreV1Api(api)
    for ns in (NS, OTHER):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    ctx = dispatcher_context(redis_client, key_prefix, api)
    hook = {"url": f"{sink.url}/apply", "secretRef": {"name": "hook-key"}, "timeout": "1s"}
    for body in (
        m.git_provider(NS, "gp", url, allowedBranches=["main"]),
        m.git_target(NS, "gt", "gp", "apps", onRefusal="Reapply", applier={"webhook": hook}),
        m.cluster_provider(),
    ):
        m.create(api, body)
    ctx.configs.publish_branch(branch_config(url, "main", NS, "gp"))
    clone = OutsideClone(url, tmp_path / "clone")
    yield World(kube, url, clone, ctx, core, redis_client, key_prefix, sink)
    sink.stop()
    host.stop()
    kube.stop()


def _uid(world: World) -> str:
    return next(t.meta.uid for t in CrdReader(world.local()).git_targets() if t.meta.name == "gt")


def test_a_2xx_is_delivered_with_a_body_the_sink_verified(world: World) -> None:
    world.secret(NS, {"hmacKey": KEY})
    commit = world.push("v: 2\n")
    world.quiet(commit)
    uid = _uid(world)
    request = world.request(commit, uid)
    outcome = world.run(request)
    assert outcome.outcome == "Delivered", outcome.message
    assert "HTTP 200" in outcome.message
    [got] = world.sink.wait_for(1, 5)
    assert got.verified and got.path == "/apply"
    assert got.json() == {
        "apiVersion": "gitopsreverser.io/v1alpha1",
        "kind": "ApplyRequest",
        "repository": world.url,
        "branch": "main",
        "commit": commit,
        "reasons": {"ForeignCommit": [uid]},
        "token": request.token,
    }
    assert got.headers["X-GitOps-Reverser-Token"] == request.token
    assert abs(int(got.headers["X-GitOps-Reverser-Timestamp"]) - time.time()) < 60
    events = world.core.list_namespaced_event(NS).items
    assert any(e.reason == "ApplyRequested" and "Webhook" in e.message for e in events)
    last, _ = world.ctx.ledger.last_request(GitTargetUid(uid))
    assert last is not None and (last.outcome, last.token) == ("Delivered", request.token)


def test_a_500_is_failed_with_the_status(world: World) -> None:
    world.secret(NS, {"hmacKey": KEY})
    world.sink.status = 500
    commit = world.push("v: 3\n")
    world.quiet(commit)
    outcome = world.run(world.request(commit, _uid(world), "Refusal"))
    assert outcome.outcome == "Failed"
    assert "answered HTTP 500" in outcome.message
    assert [d.verified for d in world.sink.wait_for(1, 5)] == [True]


def test_no_answer_within_the_timeout_is_failed(world: World) -> None:
    world.secret(NS, {"hmacKey": KEY})
    world.sink.delay_s = 30.0  # released by stop(); the endpoint's timeout is 1s
    commit = world.push("v: 4\n")
    world.quiet(commit)
    started = time.monotonic()
    outcome = world.run(world.request(commit, _uid(world)))
    assert outcome.outcome == "Failed" and "timeout" in outcome.message, outcome.message
    assert time.monotonic() - started < 20


def test_the_key_is_read_only_from_the_gittargets_namespace(world: World) -> None:
    """T1: a Secret of the same name in another namespace is never used."""
    world.secret(OTHER, {"hmacKey": KEY})
    commit = world.push("v: 5\n")
    world.quiet(commit)
    outcome = world.run(world.request(commit, _uid(world)))
    assert outcome.outcome == "Failed"
    assert outcome.message.startswith("SecretNotFound: Secret team/hook-key")
    assert world.sink.deliveries() == []


def test_a_moved_tip_sends_nothing(world: World) -> None:
    """D3 holds for a webhook as for any kind: checked before the POST."""
    world.secret(NS, {"hmacKey": KEY})
    decided = world.push("v: 6\n")
    newer = world.push("v: 7\n")
    world.quiet(newer)
    outcome = world.run(world.request(decided, _uid(world)))
    assert outcome.outcome == "Stale"
    assert world.sink.deliveries() == []


def test_applier_configured_reads_the_same_secret(world: World) -> None:
    """S2: SecretNotFound, then SecretKeyNotFound, then Configured, through the API."""
    view = next(t for t in CrdReader(world.local()).git_targets() if t.meta.name == "gt")
    assert view.applier is not None
    subject = Subject(NS, world.url, "main", "apps", view.applier, view.webhook)
    adapter = for_kind("Webhook")
    assert adapter.validate(world.local(), subject, 0).reason == "SecretNotFound"
    world.secret(NS, {"token": KEY})
    assert adapter.validate(world.local(), subject, 0).reason == "SecretKeyNotFound"
    world.core.patch_namespaced_secret(
        "hook-key", NS, {"data": {"hmacKey": base64.b64encode(KEY).decode()}}
    )
    verdict = adapter.validate(world.local(), subject, 0)
    assert (verdict.status, verdict.reason) == ("True", "Configured")
