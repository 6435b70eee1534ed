"""What the branch's very first owner reads of each applier (Q5, A1; issue 23, finding 12), against
the sandbox's Kubernetes API server with the real Flux and Argo CD CRDs, real Redis and a real
bare repository.

A Kustomization records what it last applied in ``status.lastAppliedRevision`` (as Flux and the
sandbox's Flux double write it); an Application in its last successful sync. The first start
owes a ForeignCommit exactly when that is not the tip, and reads nothing through a
ClusterProvider that does not admit the GitTarget's namespace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from sandbox import manifests as m
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.branch_worker.applied import AppliedRevisions
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

NS = "team"
KS = ApplierRef("Kustomization", NS, "apps", "default")
APP = ApplierRef("Application", NS, "apps", "default")
#: What the GitRepository and the Application name (the reader reads neither URL).
URL = "https://git.example.com/team/apps"


@pytest.fixture
def api() -> Iterator[KubeApiServer]:
    server = KubeApiServer(all_crd_files())
    server.start()
    yield server
    server.stop()


def _reader(api: KubeApiServer) -> AppliedRevisions:
    factory = ClientFactory(Settings(), time.time, local=api.api_client())
    return AppliedRevisions(lambda: CrdReader(factory.local().client), factory)


def _install(api: KubeApiServer, url: str, admitted: list[str]) -> None:
    """The namespace, a ClusterProvider admitting ``admitted``, a GitRepository and the
    Kustomization reading it."""
    m.create(api.api_client(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    m.create(api.api_client(), m.cluster_provider("default", accessFrom={"names": admitted}))
    m.create(api.api_client(), m.git_repository(NS, "repo", url))
    m.create(api.api_client(), m.kustomization(NS, "apps", "repo", "./apps"))


def _applied_at(api: KubeApiServer, commit: str) -> None:
    """Flux's kustomize-controller records the revision it applied."""
    body = {"status": {"lastAppliedRevision": f"main@sha1:{commit}"}}
    client.CustomObjectsApi(api.api_client()).patch_namespaced_custom_object_status(
        "kustomize.toolkit.fluxcd.io", "v1", NS, "kustomizations", "apps", body
    )


def _with_applier(rig: Rig, ref: ApplierRef) -> None:
    rig.target = dataclasses.replace(rig.target, applier=ref)
    rig.configs.publish_target(rig.target)


def _requests(rig: Rig) -> list[ApplyRequest]:
    return [ApplyRequest.from_json(job.args[0]) for job in rig.attempts.queue().get_jobs()]


def test_an_outside_push_before_the_first_start_is_owed_to_the_kustomization(
    rig: Rig, api: KubeApiServer
) -> None:
    """issue 23 end to end at this tier: Flux applied the commit before the outside push; the
    first owner reads that from the Kustomization and owes a ForeignCommit for the tip."""
    _install(api, URL, [NS])
    _applied_at(api, rig.head())
    _with_applier(rig, KS)
    foreign = rig.foreign_push()
    loop = rig.loop("w1", applied=_reader(api))
    loop.apply_requests()
    (request,) = _requests(rig)
    assert (request.commit, request.reasons) == (foreign, {"ForeignCommit": [rig.target.uid]})


def test_an_install_at_the_tip_sends_nothing(rig: Rig, api: KubeApiServer) -> None:
    _install(api, URL, [NS])
    _applied_at(api, rig.head())
    _with_applier(rig, KS)
    loop = rig.loop("w1", applied=_reader(api))
    loop.apply_requests()
    assert _requests(rig) == []


def test_the_reader_reads_each_kind_and_nothing_it_may_not(rig: Rig, api: KubeApiServer) -> None:
    """A Kustomization that applied nothing yet records "" (owed); a missing applier and a
    ClusterProvider that does not admit the namespace give None (owed, and nothing read
    through it); an Application gives its last successful sync."""
    _install(api, URL, [NS, "elsewhere"])
    reader = _reader(api)
    assert reader(KS, ["other"]) is None  # a namespace it does not admit: nothing read
    assert reader(KS, ["elsewhere"]) is None  # admitted, but the applier is another tenant's
    assert reader(KS, [NS]) == ""  # read: it applied nothing yet
    _applied_at(api, "c" * 40)
    assert reader(KS, ["other", NS]) == "c" * 40
    assert reader(dataclasses.replace(KS, name="gone"), [NS]) is None
    assert reader(dataclasses.replace(KS, cluster_provider="nope"), [NS]) is None
    app: dict[str, Any] = m.application(NS, "apps", URL, "apps", "team")
    app["status"] = {
        "operationState": {
            "operation": {"sync": {"revision": "d" * 40}},
            "phase": "Succeeded",
            "startedAt": "2026-12-06T05:00:00Z",
            "syncResult": {"revision": "d" * 40},
        },
    }
    m.create(api.api_client(), app)
    assert reader(APP, [NS]) == "d" * 40
