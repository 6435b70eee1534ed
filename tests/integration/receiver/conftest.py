"""The receiver as a user runs it: gunicorn in its own process, against real Redis, a Kubernetes
API double holding the webhook Secrets, and the sandbox Git host sending signed deliveries.

One stack per module (gunicorn takes about a second to start): gunicorn binds port 0 and the
fixture reads the port from its "Listening at" line, so no port is guessed; its stderr is
drained by a thread, so a chatty process never blocks on a full pipe.
"""

from __future__ import annotations

import base64
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from kubernetes import client as k8s

from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from shared.model.receivers import ReceiverRecord, ReceiverType, webhook_digest, webhook_path
from shared.settings import Settings
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.receivers import ReceiverDirectory

ROOT = Path(__file__).resolve().parents[3]
#: The receiver's console script (gunicorn with services/receiver/gunicorn.conf.py), as the
#: Procfile and the image start it.
RECEIVER = Path(sys.executable).parent / "gitops-reverser-receiver"
#: Small, so a chunked body over it is cheap to send; every real delivery here is far smaller.
LIMIT = 64 * 1024
START_TIMEOUT_S = 20.0
LISTENING = re.compile(r"Listening at: http://([0-9.]+):(\d+)")


@dataclass
class Gunicorn:
    """A running receiver process and what it printed."""

    process: subprocess.Popen[str]
    url: str
    home: Path
    metrics_dir: Path
    lines: list[str] = field(default_factory=list)


def _drain(stream: object, lines: list[str], found: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.append(line)
        match = LISTENING.search(line)
        if match:
            found.put(f"http://{match.group(1)}:{match.group(2)}")


def start_gunicorn(env: dict[str, str], home: Path, metrics_dir: Path) -> Gunicorn:
    """Start ``gitops-reverser-receiver`` as the Procfile does."""
    command = [str(RECEIVER)]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    lines: list[str] = []
    found: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_drain, args=(process.stderr, lines, found), daemon=True).start()
    try:
        url = found.get(timeout=START_TIMEOUT_S)
    except queue.Empty:
        process.kill()
        raise AssertionError("gunicorn did not listen:\n" + "".join(lines)) from None
    # The socket is bound, so this request waits in the backlog until a worker has booted.
    with urllib.request.urlopen(url + "/healthz", timeout=START_TIMEOUT_S) as response:
        assert response.status == 200
    return Gunicorn(process, url, home, metrics_dir, lines)


def stop_gunicorn(running: Gunicorn) -> None:
    """SIGTERM, as Kubernetes stops a pod; the arbiter ends its workers gracefully."""
    running.process.send_signal(signal.SIGTERM)
    try:
        running.process.wait(timeout=35)
    except subprocess.TimeoutExpired:
        running.process.kill()
        raise


@dataclass
class Stack:
    """Redis, the Kubernetes API double, the Git host, and the receiver under gunicorn."""

    redis: redis.Redis
    keys: Keys
    kube: KubeApiServer
    host: GitHost
    gunicorn: Gunicorn

    def receiver(self, kind: ReceiverType, name: str, repo_url: str, token: str) -> str:
        """A GitProvider with ``spec.receiver`` as the watcher publishes it; returns the hook URL.

        The token lives only in the Kubernetes Secret ``<name>-hook`` (key ``token``), which
        the receiver reads through shared.kube (R5).
        """
        secret = k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name=f"{name}-hook", namespace="team"),
            data={"token": base64.b64encode(token.encode()).decode()},
        )
        k8s.CoreV1Api(self.kube.api_client()).create_namespaced_secret("team", secret)
        record = ReceiverRecord("team", name, kind, f"{name}-hook", repo_url, ("main",))
        digest = webhook_digest(token.encode(), name, "team")
        ReceiverDirectory(self.redis, self.keys).publish(digest, record)
        return self.gunicorn.url + webhook_path(token.encode(), name, "team")


@contextmanager
def running_stack(root: Path, **settings: str) -> Iterator[Stack]:
    """Redis, the API double, a Git host and the receiver, with extra ``GITOPS_REVERSER_*``
    settings (``receiver_threads="2"``, say) on top of the stack's own."""
    client = connect(Settings.from_env().redis_url, client_name="tests")
    prefix = f"test:{uuid.uuid4().hex[:12]}"
    kube = KubeApiServer()
    kube.start()
    namespace = k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team"))
    k8s.CoreV1Api(kube.api_client()).create_namespace(namespace)
    kube.write_kubeconfig(root / "kubeconfig")
    metrics_dir = root / "prom"
    (metrics_dir / "stale").mkdir(parents=True)
    (root / "home").mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "GITOPS_REVERSER_REDIS_URL": Settings.from_env().redis_url,
        "GITOPS_REVERSER_KEY_PREFIX": prefix,
        "GITOPS_REVERSER_KUBECONFIG": str(root / "kubeconfig"),
        "GITOPS_REVERSER_RECEIVER_BIND": "127.0.0.1:0",
        "GITOPS_REVERSER_MAX_BODY_BYTES": str(LIMIT),
        "GITOPS_REVERSER_RECEIVER_WORKERS": "2",
    }
    env.update({f"GITOPS_REVERSER_{name.upper()}": value for name, value in settings.items()})
    host = GitHost(root / "git")
    host.start()
    running = start_gunicorn(env, root / "home", metrics_dir)
    try:
        yield Stack(client, Keys(prefix), kube, host, running)
    finally:
        stop_gunicorn(running)
        host.stop()
        kube.stop()
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("receiver")) as running:
        yield running
