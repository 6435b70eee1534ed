"""Many GitTargets over many repositories, served by several branch-worker processes.

The scale benchmarks (``many_targets``, ``takeover``) need what ``bench.product`` does not
give: several branch workers at once (the Procfile runs one of each process), each with an
id of our choosing so a lease holder can be told apart, and many GitTargets. A ``Fleet`` is
the sandbox (API double and Git host, no Flux), the watcher and ``workers`` branch workers
started with the Procfile's commands and the e2e environment, on the benchmark's Redis under a
private key prefix.

Each GitTarget lives in a namespace of its own with its GitProvider and WatchRule (a WatchRule
selects objects of its own namespace), writing a folder named after the namespace on ``main``
of repository ``i % repositories``: several GitProviders naming one repository share its
branch, so 1,000 GitTargets over 200 repositories are 200 branches of five GitTargets each.

The Git host runs in this process, so the benchmark counts its requests itself: every GET of
``info/refs?service=git-upload-pack`` is the start of one ``ls-remote`` or fetch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.product import TOKEN, read_tip, wait_for
from sandbox import manifests as m
from sandbox.githost.hooks import Hook
from sandbox.githost.server import GitHttpApp
from sandbox.processes import environment, free_port, procfile
from sandbox.stack import Sandbox, start
from shared.model.ids import Branch, BranchKey
from shared.model.receivers import webhook_path
from shared.settings import Settings
from shared.store.connection import connect
from shared.store.keys import Keys

#: Namespaces (and folders) are named ``t<index>``.
NAMESPACE = "t{:04d}"
REPOSITORY = "repo{:03d}"
#: How long a process may take to stop on SIGTERM before it is killed.
STOP_S = 30.0


class UploadPackCounter:
    """Counts ``git-upload-pack`` advertisements the sandbox Git host serves (thread-safe).

    Installed by wrapping the host's WSGI app class for as long as the context lasts; the host
    serves requests on its own threads in this process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    @contextmanager
    def installed(self) -> Iterator[UploadPackCounter]:
        original = GitHttpApp.__call__

        def counting(app: GitHttpApp, environ: dict[str, Any], start_response: Any) -> Any:
            if (
                environ.get("REQUEST_METHOD") == "GET"
                and environ.get("PATH_INFO", "").endswith("/info/refs")
                and "service=git-upload-pack" in environ.get("QUERY_STRING", "")
            ):
                with self._lock:
                    self.count += 1
            return original(app, environ, start_response)

        GitHttpApp.__call__ = counting  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            GitHttpApp.__call__ = original  # type: ignore[method-assign]


@dataclass
class Fleet:
    """A running sandbox, watcher and branch workers, and the GitTargets configured on them."""

    directory: Path
    sbx: Sandbox
    env: dict[str, str]
    keys: Keys
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    @property
    def api(self) -> client.ApiClient:
        return self.sbx.kube.api_client()

    def start_process(self, name: str, extra: str = "") -> subprocess.Popen[bytes]:
        """One Procfile entry (plus ``extra`` arguments), in its own session, logging to a file."""
        logs = self.directory / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        tag = extra.rsplit(maxsplit=1)[-1] if extra else name
        with (logs / f"{tag}.log").open("ab") as log:
            return subprocess.Popen(
                f"{procfile()[name].strip()} {extra}",
                shell=True,
                cwd=Path(__file__).resolve().parent.parent,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def start_workers(self, count: int) -> None:
        """``count`` branch workers with the ids ``w0`` ... (``--id``)."""
        for i in range(count):
            self.workers[f"w{i}"] = self.start_process("branch_worker", f"--id w{i}")

    def kill(self, worker: str) -> None:
        """SIGKILL one branch worker (its whole session) and reap it."""
        process = self.workers[worker]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_S)

    def configure(
        self, targets: int, repositories: int, commit_window: str = "0s", receiver: bool = False
    ) -> None:
        """The repositories, a ClusterProvider, and per GitTarget its namespace and objects.
        With ``receiver`` every GitProvider has a GitHub receiver, and each repository's hook
        on the Git host posts to the receiver of its first GitTarget's GitProvider."""
        host = self.sbx.githost
        self.urls = [
            host.create_repo(REPOSITORY.format(r), files={"README.md": b"x\n"})
            for r in range(repositories)
        ]
        api = self.api
        m.create(api, m.cluster_provider())
        hook = {"receiver": {"type": "github", "secretRef": {"name": "webhook"}}}
        for i in range(targets):
            ns = NAMESPACE.format(i)
            url = self.urls[i % repositories]
            m.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            if receiver:
                m.create(api, _webhook_secret(ns))
            push = {"push": {"commitWindow": commit_window}}
            m.create(api, m.git_provider(ns, "gp", url, **push, **(hook if receiver else {})))
            m.create(api, m.git_target(ns, "gt", "gp", ns))
            m.create(api, m.watch_rule(ns, "wr", "gt", ["configmaps"]))
        if receiver:
            for r in range(min(repositories, targets)):
                host.add_hook(REPOSITORY.format(r), Hook(self.hook_url(r), "github", secret=TOKEN))

    def hook_url(self, repository: int) -> str:
        """Where repository ``repository``'s webhook posts: its first GitTarget's receiver."""
        port = self.env["GITOPS_REVERSER_RECEIVER_BIND"].rsplit(":", 1)[1]
        path = webhook_path(TOKEN.encode(), "gp", NAMESPACE.format(repository))
        return f"http://127.0.0.1:{port}{path}"

    def branch_keys(self) -> list[BranchKey]:
        return [Branch(url, "main").key for url in self.urls]

    def bare(self, target: int) -> Path:
        """The bare repository GitTarget ``target`` writes to."""
        return self.sbx.githost.repo_path(REPOSITORY.format(target % len(self.urls)))

    def holders(self) -> dict[BranchKey, str]:
        """Each leased branch's holder (the worker id, without the fencing token)."""
        redis = connect(self.env["GITOPS_REVERSER_REDIS_URL"], client_name="bench")
        try:
            bks = self.branch_keys()
            values = redis.mget([self.keys.branch_lease(bk) for bk in bks])
        finally:
            redis.close()
        return {bk: str(v).split("|", 1)[0] for bk, v in zip(bks, values, strict=True) if v}

    def stop(self) -> None:
        processes = [*self.workers.values(), *self.others]
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.sbx.stop()


def ping(url: str) -> int:
    """POST a signed GitHub ``ping`` to a webhook URL, as GitHub does when a hook is created
    (the sandbox Git host sends pushes only); the answer's status code."""
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    signature = hmac.new(TOKEN.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(
        url,
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": uuid.uuid4().hex,
            "X-Hub-Signature-256": f"sha256={signature}",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(answer.status)


def _webhook_secret(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "webhook", "namespace": namespace},
        "stringData": {"token": TOKEN},
    }


@contextmanager
def fleet(directory: Path, **settings: str) -> Iterator[Fleet]:
    """The sandbox (no Flux) and a private key prefix; no process started yet."""
    sbx = start(directory, repos=(), flux=False)
    env = environment(directory, free_port())
    env["GITOPS_REVERSER_REDIS_URL"] = Settings.from_env().redis_url
    env.update({f"GITOPS_REVERSER_{k.upper()}": v for k, v in settings.items()})
    running = Fleet(directory, sbx, env, Keys(env["GITOPS_REVERSER_KEY_PREFIX"]))
    try:
        yield running
    finally:
        running.stop()
        _cleanup(running)


def _cleanup(running: Fleet) -> None:
    redis = connect(running.env["GITOPS_REVERSER_REDIS_URL"], client_name="bench")
    try:
        batch: list[str] = []
        for key in redis.scan_iter(f"{running.env['GITOPS_REVERSER_KEY_PREFIX']}:*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                redis.delete(*batch)
                batch.clear()
        if batch:
            redis.delete(*batch)
    finally:
        redis.close()


def configmap_editor(api: client.ApiClient, namespace: str) -> Callable[[str], None]:
    """Writes ``data.n`` of ConfigMap ``bench`` in ``namespace`` (created on first use)."""
    core = client.CoreV1Api(api)
    made = [False]

    def write(value: str) -> None:
        if made[0]:
            core.patch_namespaced_config_map("bench", namespace, {"data": {"n": value}})
            return
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="bench"), data={"n": value})
        core.create_namespaced_config_map(namespace, body)
        made[0] = True

    return write


def edit_and_wait(bare: Path, write: Callable[[str], None], value: str, timeout: float) -> float:
    """Seconds from the API write of ``value`` until the repository's tip moves."""
    old = read_tip(bare)
    started = time.perf_counter()
    write(value)
    wait_for("the tip to move", lambda: read_tip(bare) != old, timeout)
    return time.perf_counter() - started


def spread(count: int, of: int) -> Iterable[int]:
    """``count`` indexes spread evenly over ``range(of)`` (all of them when there are fewer)."""
    if count >= of:
        return range(of)
    return sorted({(i * of) // count for i in range(count)})
