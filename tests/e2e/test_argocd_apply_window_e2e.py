"""The apply window and its Repair for Argo CD, with every process running (issue 12: W1, A1).

An API edit lands while Argo CD runs our ForeignCommit sync (the Argo CD double's pacing gate,
``sandbox/flux/pacing.py``, holds the sync after it rendered the older commit): the sync
reverts the edit. With the window, the revert is withheld and Git keeps the edit; an
Application is owed no CatchUp for the edit's push (A1), so the collision owes it a Repair:
one pinned sync of the tip once the branch is quiet and that sync's window has closed. The
cluster ends at the API value, with no commit of Argo CD's value. The companion runs the same
schedule with the window switched off (a branch-worker process built without W1's guard,
``python -m tests.e2e.window_off_worker``): the
revert is mirrored as a commit and the cluster keeps Argo CD's value, so the first test is one
that catches the race.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client

from shared.store.collisions import Collisions
from tests.e2e.argo_support import ARGO_NS, ARGO_SETTINGS, OURS, ArgoTenant, ArgoTenants, identities
from tests.e2e.conftest import WAIT_S, Launcher
from tests.e2e.system import System
from tests.e2e.window_off_worker import WINDOW_OFF
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

#: The sync is held while the edit is made and published: a deadline no busy machine reaches.
SETTINGS = {**ARGO_SETTINGS, "attempt_deadline": "60s"}
EDITOR = "e2e-editor"  # the API side's field manager


def _start(launcher: Launcher, commands: Mapping[str, str] | None = None) -> System:
    started = launcher.start(identities(), commands=commands, **SETTINGS)
    started.namespace(ARGO_NS)
    return started


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return _start(launcher)


@pytest.fixture(scope="module")
def system_without_window(launcher: Launcher) -> System:
    return _start(launcher, WINDOW_OFF)


@pytest.fixture
def tenants(request: pytest.FixtureRequest, e2e_redis: redis.Redis) -> Iterator[ArgoTenants]:
    """Tenants on the system the test names (``system`` or ``system_without_window``)."""
    name = "system_without_window" if "without" in request.node.name else "system"
    made = ArgoTenants(request.getfixturevalue(name), e2e_redis)
    yield made
    made.close()


@dataclass
class Race:
    """What one run of the schedule left behind."""

    argo: ArgoTenant
    foreign: str  # the outside commit whose sync was held
    edited: str  # the commit that holds the API edit made inside the sync
    path: str  # the ConfigMap's file in Git

    def cluster_value(self) -> str:
        core: client.CoreV1Api = self.argo.system.core
        return str(core.read_namespaced_config_map("app", self.argo.ns).data["v"])

    def git_value(self, rev: str = "main") -> str:
        """The ConfigMap's value at ``rev`` ("" while it has no file)."""
        if self.path not in self.argo.tenant.files(rev):
            return ""
        return str(yaml.safe_load(self.argo.tenant.show(self.path, rev))["data"]["v"])

    def values_after_edit(self) -> list[str]:
        """The ConfigMap's value in each commit after the edit's."""
        return [self.git_value(c) for c in self.argo.tenant.commits_since(self.edited)]


def edit(argo: ArgoTenant, value: str) -> dict[str, Any]:
    """An API-side edit of ConfigMap ``app`` (field manager ``EDITOR``); the object."""
    core: client.CoreV1Api = argo.system.core
    found = core.patch_namespaced_config_map(
        "app", argo.ns, {"data": {"v": value}}, field_manager=EDITOR
    )
    return dict(found.to_dict())


def edited_second(obj: dict[str, Any]) -> str:
    """The managedFields time of the editor's entry (second resolution)."""
    entries = obj["metadata"]["managed_fields"]
    return max(e["time"].strftime("%Y%m%d%H%M%S") for e in entries if e["manager"] == EDITOR)


def wait_git(race: Race, value: str) -> str:
    """Wait until the tip holds ``value``; the tip."""
    wait_until(lambda: race.git_value() == value, WAIT_S, f"{value} in Git")
    return race.argo.tenant.tip()


def run_race(tenants: ArgoTenants, name: str) -> Race:
    """The schedule: a mirrored value; an outside push whose ForeignCommit sync is held at Argo
    CD's gate (it rendered the older value); an API edit inside it (mirrored while held); then
    the gate opens and Argo CD applies the older value over the edit."""
    argo = tenants.make_argo(name)
    argo.tenant.wait_watching("/configmaps")
    path = f"{argo.tenant.path}/{argo.ns}/configmaps/app.yaml"
    core: client.CoreV1Api = argo.system.core
    core.create_namespaced_config_map(
        argo.ns,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="app"), data={"v": "one"}),
        field_manager=EDITOR,
    )
    race = Race(argo, "", "", path)
    wait_git(race, "one")
    pacing = argo.argo.pacing
    pacing.gate.clear()
    try:
        race.foreign = argo.push({"README.md": "changed elsewhere\n"})
        assert pacing.holding.wait(WAIT_S), "the ForeignCommit's sync is held at the gate"
        assert argo.requests()[0].reasons == {"ForeignCommit": [argo.uid]}
        obj = edit(argo, "two")  # the API edit inside the sync
        race.edited = wait_git(race, "two")
        # a same-second tie with the editor would be ambiguous and mirrored (W2): let the
        # clock pass the edit's second before Argo CD writes
        wait_until(
            lambda: time.strftime("%Y%m%d%H%M%S", time.gmtime()) > edited_second(obj),
            3.0,
            "the next second",
        )
    finally:
        pacing.gate.set()
    wait_until(lambda: argo.synced(race.foreign), WAIT_S, "Argo CD syncs the outside commit")
    return race


def test_argo_cds_revert_inside_its_sync_is_withheld_and_repaired(tenants: ArgoTenants) -> None:
    """W1-W3, A1: Argo CD's revert is withheld (counted, kept for inspect); Git keeps the edit;
    the collision owes the Application one Repair, pinned to the tip that holds the edit, sent
    after the colliding sync finished; the cluster ends at the API value and no commit holds
    Argo CD's value."""
    race = run_race(tenants, "aw-argo-on")
    argo = race.argo
    wait_until(lambda: argo.synced(race.edited), WAIT_S, "the Repair syncs the edit's commit")
    assert race.cluster_value() == "two"
    wait_until(argo.settled, WAIT_S, "nothing owed or out")
    kept = Collisions(argo.tenant.client, argo.tenant.keys).latest(argo.tenant.bk)
    assert [(c.outcome, c.object) for c in kept] == [("withheld", f"ConfigMap/{argo.ns}/app")]
    assert race.git_value() == "two"
    assert race.values_after_edit() == [], "no commit of Argo CD's value"
    foreign, repair = argo.requests()
    assert (foreign.commit, foreign.outcome) == (race.foreign, "Delivered")
    assert (repair.commit, repair.reasons, repair.outcome) == (
        race.edited,
        {"Repair": [argo.uid]},
        "Delivered",
    )
    assert foreign.ended_at is not None and repair.sent_at > foreign.ended_at
    synced = [h["revision"] for h in argo.app()["status"]["history"]]
    assert synced[1:] == [race.foreign, race.edited]  # after the install's sync (make_argo)
    assert [op["initiatedBy"]["username"] for op in argo.recorder.ours()] == [OURS, OURS]


def test_without_the_window_argo_cds_revert_is_mirrored(tenants: ArgoTenants) -> None:
    """The same schedule with the window off: Argo CD's revert is mirrored as a commit, no
    Repair is owed, and the cluster keeps Argo CD's value: the edit survives only in history.
    This is what the test above would see if the window or the Repair did not work."""
    race = run_race(tenants, "aw-argo-off")
    argo = race.argo
    wait_until(lambda: race.git_value() == "one", WAIT_S, "Argo CD's value mirrored")
    wait_until(argo.settled, WAIT_S, "nothing owed or out")
    assert race.values_after_edit() == ["one"]
    assert race.cluster_value() == "one"
    assert [r.reasons for r in argo.requests()] == [{"ForeignCommit": [argo.uid]}]
    assert Collisions(argo.tenant.client, argo.tenant.keys).latest(argo.tenant.bk) == []
