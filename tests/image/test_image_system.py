"""The product in containers of its image, against the sandbox (issue 24 item 2).

The e2e harness (``tests/e2e``: ``Launcher``, ``FluxTenants``) runs the watcher, a branch
worker, the dispatcher and the receiver, each with ``podman run --network=host --read-only
--cap-drop=ALL`` instead of the Procfile's command. Their settings are the chart's
(``charts/gitops-reverser/templates``): each process its own health and metrics port
(``GITOPS_REVERSER_METRICS_PORT``), the receiver bound to all addresses with its Prometheus
folder on a volume of its own, the branch worker's clones and ``HOME`` under
``/var/lib/gitops-reverser``, ``/tmp`` a volume; what differs is only what a cluster would
give: the sandbox's kubeconfig is mounted (``GITOPS_REVERSER_KUBECONFIG``) instead of a service
account, and the host's network reaches the sandbox, the Git host and Redis on loopback.

Then, as a user sees it: an API edit reaches Git, a push from elsewhere comes back as a signed
webhook the receiver stores, and the Flux double applies that push.
"""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kubernetes import client

from sandbox.processes import free_port
from tests.e2e.conftest import (
    FLUX_SETTINGS,
    WAIT_S,
    FluxTenants,
    Launcher,
    e2e_redis,
)
from tests.e2e.system import ALL, System
from tests.e2e.test_apply_trigger_e2e import configmap
from tests.helpers import wait_until
from tests.image.conftest import CONTAINERS_CONF, podman

pytestmark = pytest.mark.image
#: The e2e tier's Redis fixture, imported for pytest.
__all__ = ["e2e_redis"]

SCRIPTS = {
    "watcher": "gitops-reverser-watcher",
    "branch_worker": "gitops-reverser-branch-worker",
    "dispatcher": "gitops-reverser-dispatcher",
    "receiver": "gitops-reverser-receiver",
}
KUBECONFIG = "/etc/gitops-reverser/kubeconfig"
#: The chart's volumes (emptyDirs) as tmpfs mounts the unprivileged user may write.
TMP = "--tmpfs=/tmp:rw,exec,mode=1777"
WORK = "/var/lib/gitops-reverser"
PROMETHEUS = "/var/run/prometheus"
#: Starting four containers on a busy machine takes longer than four processes.
READY_S = 180.0


def _own(name: str, port: int) -> list[str]:
    """What the chart sets for one process beyond the shared settings."""
    if name == "receiver":
        return [
            # the receiver's port is the one run_system gave the Git host's webhooks
            '-e "GITOPS_REVERSER_RECEIVER_BIND=0.0.0.0:${GITOPS_REVERSER_RECEIVER_BIND##*:}"',
            f"-e PROMETHEUS_MULTIPROC_DIR={PROMETHEUS}",
            f"--tmpfs={PROMETHEUS}:rw,mode=1777",
        ]
    own = [f"-e GITOPS_REVERSER_METRICS_PORT={port}"]
    if name == "branch_worker":
        own += [f"-e GITOPS_REVERSER_WORK_DIR={WORK}", f"-e HOME={WORK}"]
        own += [f"--tmpfs={WORK}:rw,exec,mode=1777"]
    return own


def commands(image: str, names: dict[str, str], ports: dict[str, int]) -> dict[str, str]:
    """Each process's command: its console script in a container of ``image`` (a shell line,
    run with the system's environment: every ``GITOPS_REVERSER_*`` setting is passed on)."""
    found = {}
    for name, script in SCRIPTS.items():
        words = [
            f"env CONTAINERS_CONF={CONTAINERS_CONF} podman run --rm --name {names[name]}",
            "--network=host --read-only --cap-drop=ALL --security-opt=no-new-privileges",
            TMP,
            f'-v "$GITOPS_REVERSER_KUBECONFIG:{KUBECONFIG}:ro"',
            "--env 'GITOPS_REVERSER_*'",
            f"-e GITOPS_REVERSER_KUBECONFIG={KUBECONFIG}",
            "-e GITOPS_REVERSER_WORK_DIR=/tmp/gitops-reverser",
            *_own(name, ports[name]),
            image,
            script,
        ]
        found[name] = " ".join(words)
    return found


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as page:
            return int(page.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-40:])


@pytest.fixture(scope="module")
def system(
    image: str, tmp_path_factory: pytest.TempPathFactory, e2e_redis: redis.Redis
) -> Iterator[System]:
    """The four processes in containers on one sandbox, ready (each answers /readyz)."""
    token = uuid.uuid4().hex[:8]
    names = {name: f"gitops-reverser-test-{token}-{name}" for name in SCRIPTS}
    ports = {name: free_port() for name in SCRIPTS}
    launcher = Launcher(
        tmp_path_factory.mktemp("image"), e2e_redis, commands=commands(image, names, ports)
    )
    try:
        running = launcher.start(**FLUX_SETTINGS)
        urls = {name: f"http://127.0.0.1:{port}/readyz" for name, port in ports.items()}
        urls["receiver"] = f"http://127.0.0.1:{running.receiver_port}/readyz"
        for name, url in urls.items():
            log = running.directory / "logs" / f"{name}.log"
            try:
                wait_until(
                    lambda url=url, name=name: _ready(url) or not running.procs.running(name),
                    READY_S,
                    f"{name} in its container ready",
                )
            except AssertionError as err:
                pytest.fail(f"{err}\n{name}'s log:\n{_tail(log)}")
            if not running.procs.running(name):
                pytest.fail(f"{name}'s container exited:\n{_tail(log)}")
        yield running
    finally:
        launcher.stop_all()
        for name in names.values():
            podman("rm", "-f", "--ignore", name, check=False)


@pytest.fixture
def tenants(system: System, e2e_redis: redis.Redis) -> FluxTenants:
    return FluxTenants(system, e2e_redis)


def test_the_processes_run_as_containers_of_the_image(system: System, image: str) -> None:
    """What runs is the image (not the host's processes): one container per process."""
    listed = podman("ps", "--format", "{{.Names}} {{.Image}}").stdout.splitlines()
    of_image = [line.split()[0] for line in listed if line.split()[1:] == [image]]
    for name in ALL:
        assert any(found.endswith(f"-{name}") for found in of_image), (name, listed)


def test_an_api_edit_reaches_git(tenants: FluxTenants) -> None:
    flux = tenants.make_flux("image-edit", receiver=False)
    tenant = flux.tenant
    tenant.wait_watching("/configmaps")
    base = tenant.tip()
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="hello"), data={"greeting": "from the image"}
    )
    tenant.system.core.create_namespaced_config_map(tenant.namespace, body)
    path = f"{tenant.path}/{tenant.namespace}/configmaps/hello.yaml"
    wait_until(lambda: path in tenant.files(), WAIT_S, f"{path} committed")
    assert tenant.commits_since(base)
    assert "greeting: from the image" in tenant.show(path)


def test_an_outside_push_is_a_stored_signed_webhook_and_flux_applies_it(
    tenants: FluxTenants,
) -> None:
    flux = tenants.make_flux("image-push")
    path, text = configmap(flux, "from-git", {"greeting": "hello"})
    commit = flux.push({path: text})
    deliveries = flux.system.sbx.githost.wait_for_deliveries(1, WAIT_S, flux.tenant.repo)
    assert [d.status for d in deliveries] == [202]  # signed (HMAC), verified, accepted
    wait_until(lambda: flux.notices() == [commit], WAIT_S, "the receiver to store the push")
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux to apply the outside commit")
    made = flux.system.core.read_namespaced_config_map("from-git", flux.ns)
    assert made.data == {"greeting": "hello"}
