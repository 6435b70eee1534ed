"""The Flux doubles running as controllers do: woken by watch events, not by polling.

``start()`` lists and watches GitRepositories and Kustomizations and reconciles in a worker;
intervals are an hour here, so everything a test sees was caused by an event. Tests await
``FluxControllers.log`` (a condition variable), never sleep.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.flux.activity import FETCHED, GIT_REPOSITORY, KUSTOMIZATION, Record
from tests.sandbox.integration.flux_support import (
    KUSTOMIZE,
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
        running.flux.start()
        yield running


def fetched(revision: str) -> object:
    return lambda r: r.kind == GIT_REPOSITORY and r.action == FETCHED and r.revision == revision


def test_requested_at_wakes_the_source_at_once(env: FluxEnv) -> None:
    """A new requestedAt token on a GitRepository with a 1h interval fetches the head now.

    Fact: ../shared/facts/appliers.md F1 (the watch predicate passes a changed token; the
    token is copied to ``lastHandledReconcileAt``) and F2 ("An annotation fetches whatever
    the ref's HEAD is at that moment").
    """
    env.create_source()
    env.flux.log.wait_for(fetched(f"main@sha1:{env.head()}"), WAIT_S)
    mark = env.flux.log.mark()
    second = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.request(SOURCE, "2024-01-29T17:22:23.186705496Z")
    record = env.flux.log.wait_for(fetched(f"main@sha1:{second}"), WAIT_S, since=mark)
    assert isinstance(record, Record)
    status = env.get(SOURCE)["status"]
    assert status["lastHandledReconcileAt"] == "2024-01-29T17:22:23.186705496Z"
    assert status["artifact"]["revision"] == f"main@sha1:{second}"


def test_new_revision_reaches_the_cluster_through_the_watches(env: FluxEnv) -> None:
    """Push, request the source: the Kustomization is woken by the revision change and applies
    it with manager ``kustomize-controller``; its own token is handled too.

    Facts: ../shared/facts/appliers.md F2 "What wakes Kustomizations" ("a new artifact
    revision triggers the Kustomization at once") and F3 (field manager
    ``kustomize-controller``, operation Apply); F1 for the Kustomization's token.
    """
    env.create_source()
    env.create_kustomization()
    first = f"main@sha1:{env.head()}"
    env.flux.log.wait_applied(NAMESPACE, "app", first, WAIT_S)
    mark = env.flux.log.mark()
    second = f"main@sha1:{env.work.push({'deploy/app.yaml': config_map('app', {'v': '2'})})}"
    env.request(SOURCE, "push-seen")
    env.flux.log.wait_applied(NAMESPACE, "app", second, WAIT_S, since=mark)
    cm = env.core.read_namespaced_config_map("app", NAMESPACE)
    assert cm.data == {"v": "2"}
    assert [(m.manager, m.operation) for m in cm.metadata.managed_fields] == [
        ("kustomize-controller", "Apply")
    ]
    mark = env.flux.log.mark()
    env.request(KUSTOMIZE, "again")
    record = env.flux.log.wait_for(lambda r: r.kind == KUSTOMIZATION, WAIT_S, since=mark)
    assert record.revision == second
    assert env.get(KUSTOMIZE)["status"]["lastHandledReconcileAt"] == "again"


def test_stop_ends_the_threads_promptly(tmp_path: Path) -> None:
    """``stop()`` closes the open watches and the worker without waiting for a timeout."""
    for running in open_env(tmp_path):
        running.flux.start()
        running.create_source()
        running.flux.log.wait_for(lambda r: r.kind == GIT_REPOSITORY, WAIT_S)
        began = time.monotonic()
        running.flux.stop()
        assert time.monotonic() - began < 3
