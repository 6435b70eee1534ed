"""The Flux doubles act as their own service account when the sandbox authenticates.

Fact: upstream-gitops-reverser.md §3.6 names kustomize-controller's user
``system:serviceaccount:flux-system:kustomize-controller`` (the example of a constructed
email): an apply's audit event names that user, not whoever drives the sandbox. Without
``Identities.flux_token`` the doubles act as the administrator, as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from sandbox.flux.pacing import Pacing
from sandbox.kube.access import AccessRule
from sandbox.kube.audit import AuditWebhook
from sandbox.stack import Identities, start
from sandbox.webhook_sink import WebhookSink
from tests.helpers import wait_until
from tests.sandbox.integration.flux_support import KUSTOMIZE, NAMESPACE, SOURCE, config_map

pytestmark = pytest.mark.integration

FLUX_USER = "system:serviceaccount:flux-system:kustomize-controller"
TOKENS = {"tok-admin": "admin", "tok-product": "product", "tok-flux": FLUX_USER}
EVERYONE = (AccessRule("*", ("*",), ("*",), ("*",)),)


@pytest.fixture
def sink() -> Iterator[WebhookSink]:
    s = WebhookSink(b"unused").start()
    yield s
    s.stop()


def _appliers_of(sink: WebhookSink, name: str) -> list[str]:
    """The users of the completed writes of ConfigMap ``name`` audited so far."""
    events = [e for d in sink.deliveries() for e in json.loads(d.body)["items"]]
    return [
        e["user"]["username"]
        for e in events
        if e["stage"] == "ResponseComplete"
        and e["objectRef"].get("resource") == "configmaps"
        and e["objectRef"].get("name") == name
    ]


@pytest.mark.parametrize(("flux_token", "user"), [("tok-flux", FLUX_USER), (None, "admin")])
def test_a_flux_apply_is_audited_as_the_flux_token_s_user(
    tmp_path: Path, sink: WebhookSink, flux_token: str | None, user: str
) -> None:
    identities = Identities(TOKENS, EVERYONE, "tok-product", "tok-admin", flux_token=flux_token)
    running = start(tmp_path / "sbx", argocd=False, identities=identities, flux_pacing=Pacing())
    try:
        running.kube.set_audit_webhook(AuditWebhook(f"{sink.url}/audit"))
        url = running.githost.create_repo(
            "fleet", files={"deploy/app.yaml": config_map("app", {"k": "v"}).encode()}
        )
        custom = client.CustomObjectsApi(running.api_client())
        source = {"url": url, "interval": "60m", "ref": {"branch": "main"}}
        kustomization = {
            "interval": "60m",
            "path": "./deploy",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "app"},
        }
        for (group, version, plural), kind, spec in (
            (SOURCE, "GitRepository", source),
            (KUSTOMIZE, "Kustomization", kustomization),
        ):
            body = {"apiVersion": f"{group}/{version}", "kind": kind}
            body |= {"metadata": {"name": "app", "namespace": NAMESPACE}, "spec": spec}
            custom.create_namespaced_custom_object(group, version, NAMESPACE, plural, body)
        wait_until(lambda: bool(_appliers_of(sink, "app")), 20, "the apply audited")
        assert set(_appliers_of(sink, "app")) == {user}
    finally:
        running.stop()
