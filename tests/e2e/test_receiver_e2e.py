"""Push webhooks from the Git host reach the branch through the receiver (issue 4: R1-R4, Q5, Q7).

The sandbox Git host sends real signed deliveries (GitHub JSON and form, Gitea JSON and form,
GitLab) to the receiver running under gunicorn, at the path the watcher published in the
GitProvider's ``status.receiver.webhookPath``. The system runs with a steady tick of one hour,
so a foreign tip observed within the test can only come from the webhook's notice; the last
test runs a second system with no receiver and a 2s tick to show the tick alone finds a push.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import redis

from tests.e2e.conftest import WAIT_S, Launcher, Tenant, Tenants
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

TOKEN = "e2e-webhook-token-3f9a"


@dataclass(frozen=True)
class Dialect:
    """One host's webhook: the GitProvider's ``receiver.type`` and the host's hook settings."""

    receiver_type: str
    provider: str
    content_type: str


DIALECTS = [
    Dialect("github", "github", "json"),
    Dialect("github", "github", "form"),
    Dialect("gitea", "gitea", "json"),
    Dialect("gitea", "gitea", "form"),
    Dialect("gitlab", "gitlab", "json"),
]


@pytest.fixture(scope="module")
def hooked(launcher: Launcher) -> System:
    """Every process, with a steady tick so long that only a webhook explains a tip read."""
    return launcher.start(steady_tick="1h", reconcile_period="1s", lease_period="3s")


def _webhook_tenant(system: System, client: redis.Redis, name: str, receiver_type: str) -> Tenant:
    """A tenant whose GitProvider has a receiver, and the Secret holding its token."""
    tenants = Tenants(system, client)
    receiver = {"type": receiver_type, "secretRef": {"name": "hook"}}
    t = tenants.make(name, receiver=receiver)
    tenants.secret(name, "hook", {"token": TOKEN})
    return t


def _webhook_path(t: Tenant) -> str:
    wait_until(
        lambda: bool(t.provider().get("status", {}).get("receiver", {}).get("webhookPath")),
        WAIT_S,
        f"{t.namespace}/gp status.receiver.webhookPath",
    )
    path: str = t.provider()["status"]["receiver"]["webhookPath"]
    return path


def _observed_foreign(t: Tenant, sha: str) -> bool:
    """The branch recorded ``sha`` as a foreign commit and as its observed tip (Q5)."""
    state = t.state()
    return state.foreign_tip == sha and state.observed_tip == sha


def _notices(t: Tenant) -> list[dict[str, str]]:
    entries: list[tuple[str, dict[str, str]]] = t.client.xrange(t.keys.branch_notices(t.bk))  # type: ignore[assignment]
    return [fields for _, fields in entries]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: f"{d.provider}-{d.content_type}")
def test_signed_delivery_becomes_one_notice_and_an_observed_foreign_tip(
    hooked: System, e2e_redis: redis.Redis, dialect: Dialect
) -> None:
    """R1-R4, Q5: an outside push makes the host send a signed delivery to the published path;
    it is stored as one notice (provider, ref, after, delivery id) and the branch's owner reads
    the tip and records it as a foreign commit, with no steady tick to explain it. Replaying
    the delivery (same id, same body) stores nothing new (R4).

    What each host sends and signs is facts/webhooks-git-libs.md §1.1 (GitHub: X-Hub-Signature-256
    over the raw body, the urlencoded form included), §1.2 (Gitea: bare-hex X-Gitea-Signature
    over the JSON, for a form delivery the JSON in ``payload``) and §1.4 (GitLab: the token in
    clear in X-Gitlab-Token). A redelivery carries the original's GUID: X-GitHub-Delivery "is
    unique per event, not per delivery" (github/docs#32822; "Redelivering webhooks",
    docs.github.com/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks)."""
    name = f"hook-{dialect.provider}-{dialect.content_type}"
    t = _webhook_tenant(hooked, e2e_redis, name, dialect.receiver_type)
    path = _webhook_path(t)
    hooked.hook(t.repo, path, dialect.provider, dialect.content_type, TOKEN)
    t.wait_owned()

    pushed = hooked.push(t.repo, {"docs/outside.md": f"pushed by hand to {name}\n"})
    wait_until(lambda: _observed_foreign(t, pushed), WAIT_S, "the foreign tip")
    [delivery] = hooked.sbx.githost.wait_for_deliveries(1, WAIT_S, t.repo)
    assert delivery.status == 202
    [notice] = _notices(t)
    assert notice["after"] == pushed
    assert notice["ref"] == "refs/heads/main"
    assert notice["provider"] == f"{t.namespace}/gp"
    assert notice["delivery"] == delivery.id

    replay = hooked.sbx.githost.redeliver(delivery.id)
    assert replay.status == 202
    assert len(_notices(t)) == 1


def test_without_a_receiver_the_steady_tick_finds_an_outside_push(
    launcher: Launcher, e2e_redis: redis.Redis
) -> None:
    """Q7 (docs/flux.md "The Git host's webhook"): with no receiver configured and no hook on
    the host, an idle branch reads its tip on the steady tick (2s here) and records the
    outside push as a foreign commit; no notice was ever stored."""
    ticking = launcher.start(steady_tick="2s", reconcile_period="1s", lease_period="3s")
    t = Tenants(ticking, e2e_redis).make("tick-only")
    t.wait_owned()
    pushed = ticking.push(t.repo, {"docs/outside.md": "no webhook for this one\n"})
    wait_until(lambda: _observed_foreign(t, pushed), WAIT_S, "the steady tick")
    assert _notices(t) == []
    assert ticking.sbx.githost.deliveries(t.repo) == []
