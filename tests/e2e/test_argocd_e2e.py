"""The Argo CD applier with every process running (issue 10 section 4: S2, A1-A5, D5, D6, O4).

One system runs for the module (``ARGO_SETTINGS``) with the sandbox's Argo CD double and the
API server double's access rules on: the product's identity has exactly get and update on
``applications.argoproj.io`` in ``argocd`` (``tests/e2e/argo_support.py``). Each test makes
its own tenant: a namespace and repository, a GitTarget naming an Application with automated
sync off, as docs/argocd.md sets it up. Requests are read from the apply queue (one rq job per
token, D1); what Argo CD did from the Application (its status, and every version a watch
recorded) and the double's activity log (facts: ../shared/facts/appliers.md A2-A6).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from kubernetes import client

from tests.e2e.argo_support import ARGO_NS, ARGO_SETTINGS, OURS, ArgoTenant, ArgoTenants, identities
from tests.e2e.conftest import WAIT_S, Launcher
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    started = launcher.start(identities(), **ARGO_SETTINGS)
    started.namespace(ARGO_NS)
    return started


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> Iterator[ArgoTenants]:
    made = ArgoTenants(system, e2e_redis)
    yield made
    made.close()


def configmap(argo: ArgoTenant, name: str, data: dict[str, str]) -> tuple[str, str]:
    """A ConfigMap's path in the GitTarget's folder (M4) and its document as we render it (M2)."""
    lines = [f"  {k}: {v}" for k, v in data.items()]
    text = "\n".join(
        [
            "apiVersion: v1",
            "kind: ConfigMap",
            "metadata:",
            f"  name: {name}",
            f"  namespace: {argo.ns}",
            "data:",
            *lines,
            "",
        ]
    )
    return f"{argo.tenant.path}/{argo.ns}/configmaps/{name}.yaml", text


def finished(argo: ArgoTenant, count: int) -> bool:
    sent = argo.requests()
    return len(sent) == count and all(s.outcome for s in sent)


def test_outside_push_is_synced_by_one_pinned_operation_and_nothing_else_moves(
    tenants: ArgoTenants,
) -> None:
    argo = tenants.make_argo("e2e-argo-foreign")
    path, text = configmap(argo, "from-git", {"greeting": "hello"})
    before = argo.events_handled()
    commit = argo.push({path: text})
    wait_until(lambda: argo.synced(commit), WAIT_S, "Argo CD to sync the outside commit")
    wait_until(lambda: finished(argo, 1), WAIT_S, "the request's outcome")
    [request] = argo.requests()
    print(request, argo.app(), argo.recorder.operations())
