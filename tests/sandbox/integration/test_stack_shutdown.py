"""``Sandbox.stop`` ends quietly (issue 13 part 4: ``make demo`` ends without tracebacks).

The Flux doubles used to be told "stopping" and then have the API server and the Git host shut
under a reconcile in hand, which then failed and printed connection errors at the end of the
demo. Now the reconcile in hand finishes first, while both still answer; only then do the
servers stop.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from sandbox import manifests as m
from sandbox.flux.controllers import FluxControllers
from sandbox.flux.schedule import ObjectKey
from sandbox.stack import start

pytestmark = pytest.mark.integration

WAIT_S = 30.0


def test_a_reconcile_in_hand_finishes_before_the_servers_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sbx = start(tmp_path / "sbx", argocd=False)
    flux = sbx.flux
    assert isinstance(flux, FluxControllers)
    order: list[str] = []
    entered, gate = threading.Event(), threading.Event()
    reconcile = flux._reconcilers["GitRepository"]

    def held(key: ObjectKey) -> object:
        entered.set()
        assert gate.wait(WAIT_S)
        outcome = reconcile(key)  # reads the object and fetches the repository
        order.append("reconciled")
        return outcome

    flux._reconcilers["GitRepository"] = held  # type: ignore[assignment]
    announce = flux._watchers[0].stopping

    def stopping() -> None:  # the first thing stop does: the reconcile may go on from here
        announce()
        gate.set()

    flux._watchers[0].stopping = stopping  # type: ignore[method-assign]
    server_stop = sbx.kube.stop

    def kube_stop() -> None:
        order.append("API server stopped")
        server_stop()

    sbx.kube.stop = kube_stop  # type: ignore[method-assign]
    api = sbx.api_client()
    m.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quiet"}})
    m.create(api, m.git_repository("quiet", "src", sbx.githost.repo_url("demo")))
    assert entered.wait(WAIT_S), "the Flux double never reconciled the GitRepository"
    with caplog.at_level(logging.WARNING, logger="sandbox"):
        sbx.stop()
    assert order == ["reconciled", "API server stopped"]
    noise = [r.getMessage() for r in caplog.records if r.name.startswith("sandbox")]
    assert noise == [], "stopping the sandbox logged failures"
