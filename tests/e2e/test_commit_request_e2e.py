"""A CommitRequest saves the open window now (P6; issue 15 part 2), every process running.

The GitProvider's commitWindow (10 minutes, with the process's ``max_window`` as long) would keep
an edit's window open far longer than any wait of this test (``WAIT_S``), so a commit that lands
within the wait was closed by the request, not by the window's own timer. The commit carries
``spec.message`` as its whole message; ``status.sha`` is that commit on the remote; the request
shows Ready=True Committed and Pushed=True, and is deleted once the TTL (2 s here, the
``commit_request_ttl`` setting) has passed after it finished.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import CONFIGMAPS, GROUP, VERSION, WAIT_S, Launcher, Tenant, Tenants
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

MESSAGE = "release: save the settings now\n\nAsked for by a CommitRequest, not by the timer."


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(
        reconcile_period="1s",
        steady_tick="1s",
        applier_status_period="1s",
        max_window="10m",
        commit_request_ttl="2s",
    )


def _request(system: System, tenant: Tenant, name: str) -> dict[str, Any] | None:
    try:
        return system.get(GROUP, VERSION, tenant.namespace, "commitrequests", name)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def _conditions(found: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    conditions = (found or {}).get("status", {}).get("conditions", [])
    return {c["type"]: (c["status"], c.get("reason", "")) for c in conditions}


def test_a_commit_request_commits_the_open_window_now_and_is_cleaned_up(
    system: System, e2e_redis: redis.Redis
) -> None:
    tenant = Tenants(system, e2e_redis).make("saves", commit_window="10m", rules=[CONFIGMAPS])
    tenant.wait_condition("Ready", "True")
    tenant.wait_watching("/configmaps")
    tenant.wait_owned()
    base = tenant.tip()
    system.core.create_namespaced_config_map(
        "saves",
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"k": "v"}),
    )
    wait_until(lambda: tenant.state().windows_open == 1, WAIT_S, "the edit's window opened")
    assert tenant.tip() == base, "the 10 minute window is still open"

    system.create(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "CommitRequest",
            "metadata": {"name": "save-now", "namespace": "saves"},
            "spec": {"targetRef": {"name": "gt"}, "message": MESSAGE},
        }
    )
    tip = tenant.wait_tip_moved(base)
    assert tenant.commits_since(base) == [tip]
    assert tenant.git("log", "-1", "--format=%B", tip).rstrip("\n") == MESSAGE
    assert f"{tenant.path}/saves/configmaps/settings.yaml" in tenant.changed_objects(tip)

    def reported() -> bool:
        return _conditions(_request(system, tenant, "save-now")).get("Ready") == (
            "True",
            "Committed",
        )

    wait_until(reported, WAIT_S, "the CommitRequest reported Committed")
    found = _request(system, tenant, "save-now")
    assert found is not None
    assert found["status"]["sha"] == tip
    assert found["status"]["branch"] == "main"
    assert _conditions(found)["Pushed"] == ("True", "Committed")
    assert _conditions(found)["Stalled"][0] == "False"

    wait_until(
        lambda: _request(system, tenant, "save-now") is None,
        WAIT_S,
        "the finished CommitRequest deleted after its TTL",
    )
    assert tenant.commits_since(base) == [tip], "the request made one commit, nothing more"
