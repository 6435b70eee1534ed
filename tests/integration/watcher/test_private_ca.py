"""A GitProvider behind a private CA, as the watcher reports it (issue 24 item 6).

With ``ca.crt`` in its Secret the probe verifies the host against that CA and the GitProvider
is Ready; without it the GitProvider is ``Ready=False ConnectionFailed`` and the message holds
git's certificate error, so a user sees why in ``kubectl get``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.integration.git.tls_support import PASSWORD, USER, https_host, make_ca
from tests.integration.watcher.harness import Rig, git_provider

pytestmark = pytest.mark.integration


def _secret(name: str, **data: bytes) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "team-ca"},
        "data": encoded,
    }


def test_a_git_provider_with_ca_crt_is_ready_and_one_without_says_certificate(
    rig: Rig, tmp_path: Path
) -> None:
    ca = make_ca(tmp_path / "ca")
    with https_host(tmp_path, ca) as host:
        url = host.repo_url("team/private")
        c = rig.cluster
        c.namespace("team-ca")
        basic = {"username": USER.encode(), "password": PASSWORD.encode()}
        c.create(_secret("with-ca", **basic, **{"ca.crt": ca.ca_pem}))
        c.create(_secret("without-ca", **basic))
        c.create(git_provider("team-ca", url, name="with-ca", secretRef={"name": "with-ca"}))
        c.create(git_provider("team-ca", url, name="without", secretRef={"name": "without-ca"}))
        rig.burst()

        trusted = c.conditions("GitProvider", "with-ca", "team-ca")["Ready"]
        refused = c.conditions("GitProvider", "without", "team-ca")["Ready"]
    assert (trusted["status"], trusted["reason"]) == ("True", "Succeeded")
    assert (refused["status"], refused["reason"]) == ("False", "ConnectionFailed")
    assert "certificate" in refused["message"]
    assert PASSWORD not in str(refused)
