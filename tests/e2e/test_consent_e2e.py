"""S1/A5 with every process running: consent withdrawn while a Refusal waits for a quiet
branch sends no Refusal (issue 12 part 3); the CatchUp our push owes goes out instead.

The system and tenants are made as in ``test_apply_trigger_e2e.py`` (``FLUX_SETTINGS``: the
watcher publishes a changed GitTarget within a second). The tenant's GitProvider has a commit
window of 8s, so the branch stays busy while the test withdraws consent.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubernetes import client

from shared.kube.flux import REQUESTED_AT
from shared.model.ids import GitTargetUid
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from tests.e2e.conftest import (
    CONFIGMAPS,
    VERSION,
    WAIT_S,
    FluxTenant,
    FluxTenants,
    Sent,
)
from tests.e2e.system import GROUP
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

SECRETS: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"]}


def _secret(ns: str, value: str) -> str:
    encoded = base64.b64encode(value.encode()).decode()
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n"
        f"  namespace: {ns}\ntype: Opaque\ndata:\n  password: {encoded}\n"
    )


def _settled(flux: FluxTenant) -> list[Sent] | None:
    """Every request sent, when nothing is owed, none is out and each has ended; else None.

    One read serves both the check and what the test then judges: a request sent after a
    settled read (another CatchUp of a later push of ours, on a slow machine) is not judged
    half-done by a second read."""
    owed, sent = flux.obligations(), flux.requests()
    settled = not owed.owes() and owed.attempt is None and all(s.outcome for s in sent)
    return sent if settled else None


def _both_secrets_refused(flux: FluxTenant, configs: ConfigStore) -> bool:
    """The Secret Flux created (``token``) and the receiver's (``webhook``) were refused and
    every event published for the branch is handled. A refusal is recorded and its Refusal owed
    before its event is acknowledged, so from here "settled" includes their Refusal; before
    it, nothing owed only meant the snapshot had not reached the branch yet (the race a CI run
    lost: the snapshot's Refusal went out after the test judged the tenant settled)."""
    standing = configs.refusals(GitTargetUid(flux.uid)).values()
    sensitive = [r for r in standing if r.get("reason") == "SensitiveResource"]
    return len(sensitive) >= 2 and flux.events_handled() > 0


def _consents(flux: FluxTenant, configs: ConfigStore) -> str | None:
    published = configs.target(GitTargetUid(flux.uid))
    return None if published is None else published.on_refusal


def test_consent_withdrawn_while_the_branch_is_busy_sends_no_refusal(
    tenants: FluxTenants,
) -> None:
    """S1, A5, A1: a refused Secret edit owes a Refusal while a ConfigMap write holds the
    branch busy (its window is open); the GitTarget withdraws consent (``onRefusal: None``).
    Once the branch is quiet no request names Refusal and the Kustomization is never stamped
    (a Refusal is the only reason that stamps it, D4); the CatchUp of our push is asked alone
    and delivered."""
    name = "e2e-consent-withdrawn"
    flux = tenants.make_flux(
        name,
        on_refusal="Reapply",
        rules=[CONFIGMAPS, SECRETS],
        commit_window="8s",
        files={f"clusters/{name}/{name}/secrets/token.yaml": _secret(name, "from-git")},
    )
    configs = ConfigStore(flux.tenant.client, flux.tenant.keys)
    first: list[Sent] = []

    def settled() -> bool:
        found = _settled(flux) if _both_secrets_refused(flux, configs) else None
        first[:] = found or []
        return found is not None

    wait_until(settled, WAIT_S, "the tenant to settle")
    asked_before = len(first)
    since = flux.resource_version()
    stamped = flux.kustomization()["metadata"].get("annotations", {}).get(REQUESTED_AT)
    states = BranchStates(flux.tenant.client, flux.tenant.keys)
    busy = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="busy"), data={"a": "1"})
    flux.system.core.create_namespaced_config_map(name, busy)
    wait_until(lambda: states.read(flux.tenant.bk).windows_open > 0, WAIT_S, "a window to open")
    edited = base64.b64encode(b"edited").decode()
    flux.system.core.patch_namespaced_secret("token", name, {"data": {"password": edited}})
    wait_until(lambda: bool(flux.obligations().refusals), WAIT_S, "the Refusal to be owed")
    assert len(flux.requests()) == asked_before, "nothing is asked while the window is open"
    flux.system.custom.patch_namespaced_custom_object(
        GROUP, VERSION, name, "gittargets", "gt", {"spec": {"onRefusal": "None"}}
    )
    wait_until(lambda: _consents(flux, configs) == "None", WAIT_S, "consent to be withdrawn")
    judged: list[Sent] = []

    def caught_up() -> bool:
        judged[:] = _settled(flux) or []
        return len(judged) > asked_before

    wait_until(caught_up, WAIT_S, "the CatchUp of the ConfigMap's push")
    after = judged[asked_before:]
    assert [tuple(r.reasons) for r in after] == [("CatchUp",)] * len(after)
    ended = [(r.token, r.outcome, r.ended_at) for r in after]
    assert all(r.outcome == "Delivered" for r in after), ended
    kustomization = {at for kind, at in flux.stamps(since) if kind == "Kustomization"}
    assert kustomization <= {stamped}, "the Kustomization was stamped again"
