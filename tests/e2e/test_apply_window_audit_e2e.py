"""W2 with every process running and attribution on: a same-second tie the watch's order cannot
decide is decided by the audit fact of the write (issue 28 item 4).

The schedule of tests/e2e/test_apply_window_e2e.py (a CatchUp held at the Flux double's gate,
an API edit inside it), with attribution on as the soak's ``CHAOS_ATTRIBUTION=1`` sets it up
(the API double's audit sender to the receiver, Flux acting as kustomize-controller's service
account). The edit also sets an annotation the product keeps out of Git (a bookkeeping prefix,
``shared.model.manifest``), so Flux never applies it and the editor's ``managedFields`` entry
outlives Flux taking ``data.v`` back. Once the watcher has published the edit, it is SIGKILLed
and the gate opened: Flux's revert lands in the edit's second (a tie) while no watcher runs,
and the watcher started again resumes from its cursor with the revert as the first write it
delivers of the object, so the watch's order cannot say who made it (``writers_of``). The
branch worker waits for the audit fact of that write (its uid and resourceVersion): it names
kustomize-controller's account, so the revert is withheld (not mirrored as an undecided tie),
Git keeps the edit and the CatchUp its push owes applies it back.

A revert that misses the edit's second (a busy machine) is no tie; the schedule is then run
again with the next values, a bounded number of times.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client

from shared.decide.apply_window import BY_AUDIT
from shared.model.ids import GitTargetUid
from shared.store.collisions import Collisions
from shared.store.watches import WatchAddress, WatchState
from tests.e2e.conftest import (
    FLUX_SETTINGS,
    WAIT_S,
    FluxTenant,
    FluxTenants,
    Launcher,
    kill_process,
    start_process,
)
from tests.e2e.system import System
from tests.helpers import wait_until
from tests.soak.test_chaos import ATTRIBUTION_GRACE, IDENTITIES, _attribution_on

pytestmark = pytest.mark.e2e

#: As tests/e2e/test_apply_window_e2e.py: the apply is held longer than 10 s may allow.
SETTINGS = {**FLUX_SETTINGS, "attempt_deadline": "60s", "attribution_grace": ATTRIBUTION_GRACE}
EDITOR = "e2e-editor"  # the API side's field manager (not kubectl*: Flux's cleanup keeps it)
#: The editor's own annotation: bookkeeping, so never in Git and never applied by Flux.
NOTE = "kubectl.kubernetes.io/edit-note"
#: Schedules tried until one makes a tie (Flux's revert in the edit's second).
TRIES = 6


@pytest.fixture(scope="module")
def system(launcher: Launcher, e2e_redis: redis.Redis) -> System:
    running = launcher.start(IDENTITIES, **SETTINGS)
    _attribution_on(running, e2e_redis)
    return running


@dataclass
class App:
    """ConfigMap ``app`` of one Flux tenant: in the cluster and in Git."""

    flux: FluxTenant
    path: str

    def cluster(self) -> dict[str, Any]:
        core: client.CoreV1Api = self.flux.system.core
        return dict(core.read_namespaced_config_map("app", self.flux.ns).to_dict())

    def git_value(self) -> str:
        if self.path not in self.flux.tenant.files("main"):
            return ""
        return str(yaml.safe_load(self.flux.tenant.show(self.path, "main"))["data"]["v"])

    def in_git(self, value: str) -> str:
        """Wait until the tip holds ``value``; the tip."""
        wait_until(lambda: self.git_value() == value, WAIT_S, f"{value} in Git")
        return self.flux.tenant.tip()

    def edit(self, value: str) -> dict[str, Any]:
        """An API edit of ``data.v`` that also sets the editor's own annotation."""
        body = {"metadata": {"annotations": {NOTE: value}}, "data": {"v": value}}
        core: client.CoreV1Api = self.flux.system.core
        found = core.patch_namespaced_config_map("app", self.flux.ns, body, field_manager=EDITOR)
        return dict(found.to_dict())


def _seconds(obj: dict[str, Any]) -> dict[str, str]:
    """Each manager's newest ``managedFields`` time, to the second."""
    found: dict[str, str] = {}
    for entry in obj["metadata"]["managed_fields"] or []:
        at = entry["time"].strftime("%Y%m%d%H%M%S")
        found[entry["manager"]] = max(at, found.get(entry["manager"], at))
    return found


def _published(state: WatchState, at: WatchAddress, version: str) -> bool:
    """Whether the watch's cursor moved past ``version`` (it publishes before it moves)."""
    cursor = state.cursor(at)
    return cursor is not None and int(cursor) >= int(version)


def _next_second_starts() -> None:
    """Wait for the start of a wall-clock second, so the edit and the revert have the most of
    it (pacing, not synchronisation: the tie is checked, and tried again when missed)."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def _tie(app: App, system: System, state: WatchState, at: WatchAddress, n: int) -> bool:
    """One schedule: an edit inside the held CatchUp, published, the watcher killed, the gate
    opened; True when Flux's revert shares the edit's second. The watcher runs again after."""
    pacing = system.sbx.flux.pacing if system.sbx.flux else None
    assert pacing is not None
    flux = app.flux
    pacing.gate.clear()
    try:
        app.edit(f"v{n}")
        second = app.in_git(f"v{n}")
        assert pacing.holding.wait(WAIT_S), "the CatchUp is held at Flux's gate"
        _next_second_starts()
        edited = app.edit(f"api{n}")  # the API edit, inside the apply
        version = str(edited["metadata"]["resource_version"])
        wait_until(lambda: _published(state, at, version), WAIT_S, "the edit published", 0.001)
        kill_process(system, "watcher")
    finally:
        pacing.gate.set()
    wait_until(lambda: flux.applied(second), WAIT_S, "Flux applies the held commit")
    seconds = _seconds(app.cluster())
    start_process(system, "watcher")
    return seconds.get(EDITOR) == seconds.get("kustomize-controller")


def test_a_tie_the_watch_cannot_order_is_decided_by_its_audit_fact(
    system: System, e2e_redis: redis.Redis
) -> None:
    flux = FluxTenants(system, e2e_redis).make_flux("aw-audit", receiver=False, quiet="2s")
    flux.tenant.wait_watching("/configmaps")
    app = App(flux, f"{flux.tenant.path}/{flux.ns}/configmaps/app.yaml")
    core: client.CoreV1Api = system.core
    core.create_namespaced_config_map(
        flux.ns,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app"), data={"v": "v0"}),
        field_manager=EDITOR,
    )
    first = app.in_git("v0")
    wait_until(lambda: flux.applied(first), WAIT_S, "Flux applies the first value")
    uid = GitTargetUid(str(flux.tenant.target()["metadata"]["uid"]))
    at = WatchAddress(uid, "/configmaps", flux.ns)
    state = WatchState(flux.tenant.client, flux.tenant.keys)
    collisions = Collisions(flux.tenant.client, flux.tenant.keys)
    for n in range(1, TRIES + 1):
        tied = _tie(app, system, state, at, n)
        # whatever the second, the revert is withheld (by the audit fact on a tie, else by
        # its managedFields time alone): Git keeps the edit, the CatchUp applies it back
        wait_until(lambda n=n: app.cluster()["data"]["v"] == f"api{n}", WAIT_S, "repaired")
        assert app.git_value() == f"api{n}"
        if tied:
            break
    else:
        pytest.fail(f"no tie in {TRIES} schedules: Flux's revert never shared the edit's second")
    kept = collisions.latest(flux.tenant.bk)
    assert kept[0].outcome == "withheld"
    assert BY_AUDIT in kept[0].why, kept[0].why
    assert all(c.outcome != "ambiguous" for c in kept)
