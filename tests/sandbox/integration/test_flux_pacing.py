"""The applier doubles' timing (issue 12): an apply runs seconds after its request, object by
object, and a test can hold it open to put an API edit inside it (W1's race).

Each test pins one behaviour to one fact: the seed's "An apply runs a few seconds after its
stamp"; F3's one-by-one ``ApplyAllStaged`` (stage one first) and its server-side apply with
force as ``kustomize-controller``, which reverts an edit made inside the apply; A2's Argo CD
operation that starts as soon as it is seen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from sandbox.flux import FluxControllers
from sandbox.flux.pacing import (
    ARGOCD_BEFORE_APPLY_S,
    ARGOCD_BETWEEN_OBJECTS_S,
    FLUX_BEFORE_APPLY_S,
    Pacing,
    argocd_default,
)
from tests.sandbox.integration.flux_support import (
    NAMESPACE,
    SOURCE,
    WAIT_S,
    FluxEnv,
    config_map,
    open_env,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path) -> Iterator[FluxEnv]:
    for running in open_env(tmp_path):
        yield running
        running.flux.stop()  # the paced doubles a test started in place of the fixture's


def start_with(env: FluxEnv, tmp_path: Path, pacing: Pacing | None) -> FluxControllers:
    """Replace the fixture's fast doubles by ones with ``pacing`` (None: the default)."""
    env.flux.stop()
    env.flux = FluxControllers(env.kube.api_client(), tmp_path / "paced", pacing=pacing)
    env.flux.start()
    return env.flux


def test_by_default_an_apply_runs_seconds_after_its_request(env: FluxEnv, tmp_path: Path) -> None:
    """Seed: "An apply runs a few seconds after its stamp". With no pacing given, the
    Kustomization applies a new revision no sooner than ``FLUX_BEFORE_APPLY_S`` after the
    GitRepository's requestedAt token (a lower bound: a busy machine only makes it later)."""
    flux = start_with(env, tmp_path, None)
    assert flux.pacing.before_apply_s == FLUX_BEFORE_APPLY_S >= 2.0
    env.create_source()
    env.create_kustomization()
    flux.log.wait_applied(NAMESPACE, "app", f"main@sha1:{env.head()}", WAIT_S + 5)
    mark = flux.log.mark()
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    asked = time.time()
    env.request(SOURCE, "now")
    record = flux.log.wait_applied(NAMESPACE, "app", f"main@sha1:{second}", WAIT_S + 5, mark)
    assert record.time - asked >= FLUX_BEFORE_APPLY_S


def test_an_api_edit_inside_a_held_apply_is_reverted_by_it(env: FluxEnv, tmp_path: Path) -> None:
    """F3: the apply is a server-side apply with force as ``kustomize-controller``: an edit
    made while the apply is held (the gate closed) is reverted when it goes on, and the
    object's newest managedFields entry is the controller's alone (the race W1 withholds)."""
    flux = start_with(env, tmp_path, Pacing())
    env.create_source()
    env.create_kustomization()
    flux.log.wait_applied(NAMESPACE, "app", f"main@sha1:{env.head()}", WAIT_S)
    mark = flux.log.mark()
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    flux.pacing.gate.clear()
    try:
        env.request(SOURCE, "held")
        assert flux.pacing.holding.wait(WAIT_S), "the apply waits at the gate"
        env.core.patch_namespaced_config_map(
            "app", NAMESPACE, {"data": {"color": "red"}}, field_manager="editor"
        )
        assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {"color": "red"}
    finally:
        flux.pacing.gate.set()
    flux.log.wait_applied(NAMESPACE, "app", f"main@sha1:{second}", WAIT_S, mark)
    cm = env.core.read_namespaced_config_map("app", NAMESPACE)
    assert cm.data == {"color": "green"}
    entries = cm.metadata.managed_fields
    newest = max(e.time for e in entries)
    assert {e.manager for e in entries if e.time == newest} == {"kustomize-controller"}


class Watching(Pacing):
    """Pacing that notes, at each gap, which of the folder's objects exist so far."""

    def __init__(self, core: client.CoreV1Api) -> None:
        super().__init__(between_objects_s=0.01)
        self.core = core
        self.seen: list[tuple[bool, list[str]]] = []

    def between(self, stop: threading.Event) -> None:
        names = [ns.metadata.name for ns in self.core.list_namespace().items]
        cms = sorted(
            cm.metadata.name
            for cm in self.core.list_namespaced_config_map("paced").items
            if cm.metadata.name.startswith("cm-")
        )
        self.seen.append(("paced" in names, cms))
        super().between(stop)


def test_objects_are_applied_one_by_one_with_a_gap(env: FluxEnv, tmp_path: Path) -> None:
    """F3 (``ApplyAllStaged``): Namespaces first, then each object on its own, so an edit can
    land between two objects of one apply; the gap is where the pacing pauses."""
    pacing = Watching(env.core)
    flux = start_with(env, tmp_path, pacing)
    files = {
        "deploy/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: paced\n",
        **{
            f"deploy/cm-{i}.yaml": config_map(f"cm-{i}", {"i": str(i)}).replace(
                f"namespace: {NAMESPACE}", "namespace: paced"
            )
            for i in (1, 2)
        },
    }
    revision = f"main@sha1:{env.work.push(files)}"
    env.create_source()
    env.create_kustomization()
    flux.log.wait_applied(NAMESPACE, "app", revision, WAIT_S)
    # four objects (the Namespace, app, cm-1, cm-2): three gaps, the Namespace before them all
    assert len(pacing.seen) == 3
    assert all(ns for ns, _ in pacing.seen)
    counts = [len(cms) for _, cms in pacing.seen]
    assert counts == sorted(counts) and counts[0] < 2 and counts[-1] >= 1


def test_argo_cd_starts_an_operation_at_once() -> None:
    """A2: the application controller enqueues an Application whenever ``operation`` is set
    and runs it from a fresh read, so the double's default pacing adds no pause (the facts
    give no render or apply latency to pin a pause to)."""
    pacing = argocd_default()
    assert (pacing.before_apply_s, pacing.between_objects_s) == (
        ARGOCD_BEFORE_APPLY_S,
        ARGOCD_BETWEEN_OBJECTS_S,
    )
    assert ARGOCD_BEFORE_APPLY_S == ARGOCD_BETWEEN_OBJECTS_S == 0.0
    stop = threading.Event()
    stop.set()  # a pause would raise Stopping at once: none is taken, the gate is open
    pacing.hold(stop)
    pacing.between(stop)
    assert pacing.gate.is_set() and not pacing.holding.is_set()
