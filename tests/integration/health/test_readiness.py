"""Every process answers ``/healthz`` and ``/readyz`` on its metrics port (issue 13; O1, and
O4: the chart's probes use them; C9).

Each process is started by its console script, as the Procfile, the image and the chart start
it, against a private redis-server and the sandbox's Kubernetes API double. ``/readyz`` is 200
while Redis answers, 503 naming Redis once it is stopped (``/healthz`` stays 200: an outage
takes a pod out of service, it does not get it restarted), and 200 again once Redis is back;
a process that needs the Kubernetes API is not ready while the API does not answer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from sandbox.processes import free_port
from shared.health import Check, Health, serve
from tests.fixtures import process_env
from tests.helpers import wait_until
from tests.integration.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.integration
__all__ = ["redis_server"]  # the fixture, imported for pytest

BIN = Path(sys.executable).parent
#: Bound on a process starting, and on its readiness following Redis (probes every request).
WAIT_S = 45.0
#: A process finishes the work in hand after SIGTERM within this (conventions 10).
STOP_S = 30.0


@dataclass
class Answer:
    status: int
    body: dict[str, str]


def get(url: str) -> Answer | None:
    """One GET: its status and JSON body, or None when nothing answers on the port yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as page:
            return Answer(page.status, json.loads(page.read()))
    except urllib.error.HTTPError as err:
        return Answer(err.code, json.loads(err.read()))
    except (ConnectionError, TimeoutError, urllib.error.URLError):  # not answering (yet)
        return None


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The Kubernetes API double with the project's CRDs; yields its kubeconfig."""
    server = KubeApiServer(all_crd_files())
    server.start()
    kubeconfig = tmp_path_factory.mktemp("kube") / "kubeconfig"
    server.write_kubeconfig(kubeconfig, context="sandbox")
    yield kubeconfig
    server.stop()


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def answer(self, path: str) -> Answer | None:
        assert self.process.poll() is None, self.log.read_text()
        return get(self.url + path)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=STOP_S)


def start(
    command: str, redis: RedisServer, kubeconfig: Path, tmp_path: Path, **settings: str
) -> Running:
    """Start one console script with its own metrics (or receiver) port; wait for /healthz."""
    port = free_port()
    env = process_env(
        redis_url=redis.url,
        kubeconfig=str(kubeconfig),
        work_dir=str(tmp_path / "work"),
        metrics_port=str(port),
        receiver_bind=f"127.0.0.1:{port}",
        receiver_workers="1",
        **settings,
    )
    log = tmp_path / f"{command}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(BIN / command)], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    running = Running(process, f"http://127.0.0.1:{port}", log)
    try:
        wait_until(lambda: running.answer("/healthz") is not None, WAIT_S, f"{command} /healthz")
    except BaseException:
        process.kill()  # the caller never gets it to stop: do not leave it running
        process.wait(timeout=STOP_S)
        raise
    return running


def _status(running: Running, path: str) -> int:
    found = running.answer(path)
    return 0 if found is None else found.status


COMMANDS = (
    "gitops-reverser-watcher",
    "gitops-reverser-branch-worker",
    "gitops-reverser-dispatcher",
    "gitops-reverser-receiver",
)


@pytest.mark.parametrize("command", COMMANDS)
def test_readyz_follows_redis_and_healthz_stays_up(
    command: str, redis_server: RedisServer, kube: Path, tmp_path: Path
) -> None:
    """Issue 13: /readyz 200 with Redis up, 503 naming Redis with it down, 200 once back."""
    running = start(command, redis_server, kube, tmp_path)
    try:
        assert _status(running, "/healthz") == 200
        wait_until(lambda: _status(running, "/readyz") == 200, WAIT_S, f"{command} ready")
        redis_server.stop()
        wait_until(lambda: _status(running, "/readyz") == 503, WAIT_S, f"{command} not ready")
        down = running.answer("/readyz")
        assert down is not None and "Redis unreachable" in down.body["reason"], down
        assert _status(running, "/healthz") == 200, "an outage does not make a process dead"
        redis_server.start()
        wait_until(lambda: _status(running, "/readyz") == 200, WAIT_S, f"{command} ready again")
        metrics = urllib.request.urlopen(running.url + "/metrics", timeout=10).read()
        assert b"# TYPE" in metrics, "the same port still serves /metrics"
    finally:
        code = running.stop()
    assert code == 0, running.log.read_text()


def test_a_process_that_needs_the_api_is_not_ready_without_it(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The watcher reads everything from the Kubernetes API: while it does not answer, the
    watcher is alive but not ready, and /readyz names the API."""
    server = KubeApiServer(all_crd_files())
    server.start()
    kubeconfig = tmp_path / "kubeconfig"
    server.write_kubeconfig(kubeconfig, context="sandbox")
    running = start("gitops-reverser-watcher", redis_server, kubeconfig, tmp_path)
    try:
        wait_until(lambda: _status(running, "/readyz") == 200, WAIT_S, "the watcher ready")
        server.stop()
        wait_until(lambda: _status(running, "/readyz") == 503, WAIT_S, "the watcher not ready")
        down = running.answer("/readyz")
        assert down is not None
        assert "kubernetes: Kubernetes API unreachable" in down.body["reason"], down
        assert "redis: ok" in down.body["reason"], down
        assert _status(running, "/healthz") == 200
    finally:
        running.stop()


def test_serve_answers_over_http_on_the_port_it_bound() -> None:
    """``shared.health.serve`` with port 0 binds a free port and says which."""
    server = serve(0, Health([Check("redis", lambda: None)]), host="127.0.0.1")
    try:
        found = get(f"http://127.0.0.1:{server.port}/readyz")
        assert found == Answer(200, {"status": "ok", "reason": "redis: ok"})
    finally:
        server.close()
