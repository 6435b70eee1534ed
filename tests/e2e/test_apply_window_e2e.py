"""The apply window with every process running (issue 12: W1-W3).

An API edit lands while Flux is applying our CatchUp (the sandbox Flux double's pacing gate
holds the apply open): the apply reverts the edit. With the window, the revert is withheld:
Git keeps the edit, the CatchUp that the edit's push owes applies it back, and the cluster ends
at the API value with no commit of Flux's value. The companion runs the same schedule with the
window switched off (its branch-worker process started as ``python -m
tests.e2e.window_off_worker``, the product's process built without W1's guard; the product has
no switch for it): the race is observed, so the first test is one that catches it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client

from shared.store.collisions import Collisions
from tests.e2e.conftest import FLUX_SETTINGS, WAIT_S, FluxTenant, FluxTenants, Launcher
from tests.e2e.system import System
from tests.e2e.window_off_worker import WINDOW_OFF
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

#: The apply is held while the edit is made and published, longer than FLUX_SETTINGS' 10s
#: attempt deadline might allow on a busy machine; the product's default is 330s.
SETTINGS = {**FLUX_SETTINGS, "attempt_deadline": "60s"}
EDITOR = "e2e-editor"  # the API side's field manager


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(**SETTINGS)


@pytest.fixture(scope="module")
def system_without_window(launcher: Launcher) -> System:
    return launcher.start(commands=WINDOW_OFF, **SETTINGS)


@dataclass
class Race:
    """What one run of the schedule left behind."""

    flux: FluxTenant
    edited: str  # the commit that holds the API edit made inside the apply
    path: str  # the ConfigMap's file in Git

    def cluster_value(self) -> str:
        core = self.flux.system.core
        return str(core.read_namespaced_config_map("app", self.flux.ns).data["v"])

    def git_value(self, rev: str = "main") -> str:
        """The ConfigMap's value at ``rev`` ("" while it has no file)."""
        if self.path not in self.flux.tenant.files(rev):
            return ""
        return str(yaml.safe_load(self.flux.tenant.show(self.path, rev))["data"]["v"])

    def values_after_edit(self) -> list[str]:
        """The ConfigMap's value in each commit after the edit's."""
        return [self.git_value(c) for c in self.flux.tenant.commits_since(self.edited)]


def edit(flux: FluxTenant, value: str) -> dict[str, Any]:
    """An API-side edit of ConfigMap ``app`` (field manager ``EDITOR``); the object."""
    body = {"data": {"v": value}}
    core: client.CoreV1Api = flux.system.core
    found = core.patch_namespaced_config_map("app", flux.ns, body, field_manager=EDITOR)
    return dict(found.to_dict())


def edited_second(obj: dict[str, Any]) -> str:
    """The managedFields time of the editor's entry (second resolution)."""
    entries = obj["metadata"]["managed_fields"]
    return max(e["time"].strftime("%Y%m%d%H%M%S") for e in entries if e["manager"] == EDITOR)


def wait_git(race: Race, value: str) -> str:
    """Wait until the tip holds ``value``; the tip."""
    wait_until(lambda: race.git_value() == value, WAIT_S, f"{value} in Git")
    return race.flux.tenant.tip()


def run_race(system: System, client_: redis.Redis, name: str) -> Race:
    """The schedule: a published value, a CatchUp held at Flux's gate, an API edit inside it
    (published while held), then the gate opens and Flux applies the older commit."""
    flux = FluxTenants(system, client_).make_flux(name, receiver=False, quiet="2s")
    flux.tenant.wait_watching("/configmaps")
    path = f"{flux.tenant.path}/{flux.ns}/configmaps/app.yaml"
    pacing = system.sbx.flux.pacing if system.sbx.flux else None
    assert pacing is not None
    core: client.CoreV1Api = system.core
    core.create_namespaced_config_map(
        flux.ns,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app"), data={"v": "one"}),
        field_manager=EDITOR,
    )
    race = Race(flux, "", path)
    first = wait_git(race, "one")
    wait_until(lambda: flux.applied(first), WAIT_S, "Flux applies the first value")
    pacing.gate.clear()
    try:
        edit(flux, "two")
        second = wait_git(race, "two")
        assert pacing.holding.wait(WAIT_S), "the CatchUp of 'two' is held at Flux's gate"
        assert not flux.applied(second)
        obj = edit(flux, "three")  # the API edit inside the apply
        race.edited = wait_git(race, "three")
        # a same-second tie with the editor would be ambiguous and mirrored (W2): let the
        # clock pass the edit's second before Flux writes
        wait_until(
            lambda: time.strftime("%Y%m%d%H%M%S", time.gmtime()) > edited_second(obj),
            3.0,
            "the next second",
        )
    finally:
        pacing.gate.set()
    wait_until(lambda: flux.applied(second), WAIT_S, "Flux applies 'two' over the edit")
    return race


def test_the_revert_inside_an_apply_is_withheld_and_repaired(
    system: System, e2e_redis: redis.Redis
) -> None:
    """W1-W3: Flux's revert of the edit is withheld (counted, kept for inspect); Git keeps the
    edit; the CatchUp its push owes applies it back; no commit holds Flux's value."""
    race = run_race(system, e2e_redis, "aw-on")
    flux = race.flux
    wait_until(lambda: flux.applied(race.edited), WAIT_S, "the CatchUp re-applies the edit")
    wait_until(lambda: race.cluster_value() == "three", WAIT_S, "the cluster at the API value")
    wait_until(lambda: flux.events_handled() > 0, WAIT_S, "every event handled")
    kept = Collisions(flux.tenant.client, flux.tenant.keys).latest(flux.tenant.bk)
    assert [(c.outcome, c.object) for c in kept] == [("withheld", f"ConfigMap/{flux.ns}/app")]
    assert race.git_value() == "three"
    assert race.values_after_edit() == [], "no commit of Flux's value"


def test_without_the_window_the_race_is_observed(
    system_without_window: System, e2e_redis: redis.Redis
) -> None:
    """The same schedule with the window off: Flux's revert is mirrored as a commit, and the
    CatchUp for it leaves the cluster at Flux's value: the edit survives only in history.
    This is what the test above would see if the window did not work."""
    race = run_race(system_without_window, e2e_redis, "aw-off")
    wait_until(lambda: race.git_value() == "two", WAIT_S, "Flux's value mirrored")
    assert race.values_after_edit() == ["two"]
    tip = race.flux.tenant.tip()
    wait_until(lambda: race.flux.applied(tip), WAIT_S, "the CatchUp of Flux's value")
    assert race.cluster_value() == "two"
    assert Collisions(e2e_redis, race.flux.tenant.keys).latest(race.flux.tenant.bk) == []
