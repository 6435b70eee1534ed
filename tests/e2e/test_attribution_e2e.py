"""Commits authored by the people who made the edits (P5; issue 15), every process running.

The API server double audits each edit to the receiver's ``/audit-webhook/<route>`` as
kube-apiserver's batching webhook backend does (``sandbox.kube.audit``: batch of at most 10,
1 s wait, the facts' e2e flags, upstream-gitops-reverser.md §9.15), with the user of each
request's bearer token. Two users edit ConfigMaps of one GitTarget within one commit window:
the window holds one author (§1.6), so two commits appear, authored by them (§3.6: alice's
display-name and email claims, bob's username and a constructed safe email), and committed by
the product.
"""

from __future__ import annotations

import pytest
import redis
from kubernetes import client

from sandbox.kube.access import AccessRule
from sandbox.kube.audit import AuditWebhook
from sandbox.stack import Identities
from shared.store.attribution import AuditRoutes
from tests.e2e.conftest import (
    CONFIGMAPS,
    GROUP,
    VERSION,
    WAIT_S,
    Launcher,
    Tenant,
    Tenants,
    keys_of,
)
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

ROUTE = "e2e-cluster"
HOOK_TOKEN = "audit-hook-token"
COMMITTER = "GitOps Reverser <noreply@gitopsreverser.io>"
TOKENS = {
    "e2e-product-token": "gitops-reverser",
    "e2e-admin-token": "admin",
    "alice-token": "alice",
    "bob-token": "bob",
}
EXTRA = {
    "alice": {
        "configbutler.ai/claims/display-name": ["Alice Liddell"],
        "configbutler.ai/claims/email": ["alice@example.org"],
    }
}


@pytest.fixture(scope="module")
def system(launcher: Launcher, e2e_redis: redis.Redis) -> System:
    everyone = (AccessRule("*", ("*",), ("*",), ("*",)),)
    identities = Identities(TOKENS, everyone, "e2e-product-token", "e2e-admin-token")
    # a grace far above the batch wait, so a busy machine cannot turn a late fact into the
    # sentinel (the wait ends as soon as the fact arrives)
    running = launcher.start(
        identities, reconcile_period="1s", steady_tick="1s", attribution_grace="20s"
    )
    running.namespace("gitops-reverser")  # Settings.namespace: the token Secret lives here
    running.core.create_namespaced_secret(
        "gitops-reverser",
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="audit-token"), string_data={"token": HOOK_TOKEN}
        ),
    )
    running.custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterproviders",
        "default",
        {"spec": {"attribution": {"auditRoute": ROUTE, "tokenSecretRef": {"name": "audit-token"}}}},
    )
    url = f"http://127.0.0.1:{running.receiver_port}/audit-webhook/{ROUTE}"
    running.sbx.kube.set_audit_webhook(AuditWebhook(url, HOOK_TOKEN, user_extra=EXTRA))
    routes = AuditRoutes(e2e_redis, keys_of(running))
    wait_until(lambda: routes.lookup(ROUTE) is not None, WAIT_S, "the audit route published")
    return running


def test_two_users_edits_in_one_window_become_two_commits_by_them(
    system: System, e2e_redis: redis.Redis
) -> None:
    tenant = Tenants(system, e2e_redis).make("attrib", commit_window="5s", rules=[CONFIGMAPS])
    wait_until(lambda: tenant.condition("Ready") is not None, WAIT_S, "the GitTarget reconciled")
    base = tenant.tip()
    alice = client.CoreV1Api(system.sbx.kube.api_client("alice-token"))
    bob = client.CoreV1Api(system.sbx.kube.api_client("bob-token"))
    cm = client.V1ConfigMap
    meta = client.V1ObjectMeta
    alice.create_namespaced_config_map(
        "attrib", cm(metadata=meta(name="from-alice"), data={"k": "a"})
    )
    bob.create_namespaced_config_map("attrib", cm(metadata=meta(name="from-bob"), data={"k": "b"}))

    def written() -> bool:
        return len(tenant.commits_since(base)) >= 2 and all(
            f"{tenant.path}/attrib/configmaps/{n}.yaml" in tenant.files()
            for n in ("from-alice", "from-bob")
        )

    wait_until(written, WAIT_S, "both edits committed")
    people = {}
    for commit in tenant.commits_since(base):
        author, committer = tenant.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", commit).split(
            "|"
        )
        assert committer == COMMITTER
        for path in tenant.changed_objects(commit):
            people[path.rsplit("/", 1)[1]] = author
    assert people == {
        "from-alice.yaml": "Alice Liddell <alice@example.org>",
        "from-bob.yaml": "bob <bob@noreply.cluster.local>",
    }


def _author_of_change(tenant: Tenant, base: str, path: str) -> str:
    """The author of the one commit since ``base`` that changed ``path``."""
    commits = [c for c in tenant.commits_since(base) if path in tenant.changed_objects(c)]
    assert len(commits) == 1, commits
    return tenant.git("log", "-1", "--format=%an <%ae>", commits[0])


def test_a_delete_is_authored_by_who_deleted_and_never_credits_a_namesake(
    system: System, e2e_redis: redis.Redis
) -> None:
    """P5, deletes: alice deletes bob's ConfigMap; the API server answers the DELETE with a
    Status whose ``details.uid`` names it (its audit event's ``objectRef`` has no uid): the
    commit that removes the file is hers. Then, with the audit webhook off (no fact can
    come), bob makes a ConfigMap of the same name: its commit is the unresolved sentinel's,
    never alice's (her delete was of the old object) nor bob's old create's."""
    tenant = Tenants(system, e2e_redis).make("attribdel", rules=[CONFIGMAPS])
    wait_until(lambda: tenant.condition("Ready") is not None, WAIT_S, "the GitTarget reconciled")
    alice = client.CoreV1Api(system.sbx.kube.api_client("alice-token"))
    bob = client.CoreV1Api(system.sbx.kube.api_client("bob-token"))
    path = f"{tenant.path}/attribdel/configmaps/doomed.yaml"
    doomed = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="doomed"), data={"k": "b"})
    base = tenant.tip()
    bob.create_namespaced_config_map("attribdel", doomed)
    wait_until(lambda: path in tenant.files(), WAIT_S, "bob's ConfigMap committed")
    assert _author_of_change(tenant, base, path) == "bob <bob@noreply.cluster.local>"
    base = tenant.tip()
    alice.delete_namespaced_config_map("doomed", "attribdel")
    wait_until(lambda: path not in tenant.files(), WAIT_S, "the delete committed")
    assert _author_of_change(tenant, base, path) == "Alice Liddell <alice@example.org>"
    webhook = system.sbx.kube.audit.webhook if system.sbx.kube.audit is not None else None
    assert webhook is not None
    system.sbx.kube.set_audit_webhook(None)
    try:
        base = tenant.tip()
        bob.create_namespaced_config_map("attribdel", doomed)
        wait_until(lambda: path in tenant.files(), WAIT_S, "the namesake committed")
        assert _author_of_change(tenant, base, path) == (
            "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>"
        )
    finally:
        system.sbx.kube.set_audit_webhook(webhook)
