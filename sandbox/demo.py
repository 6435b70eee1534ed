"""``python -m sandbox demo``: the product end to end on the sandbox, as a short story.

Starts the sandbox (Kubernetes API double, Git host, Flux doubles), configures a GitProvider
with a GitHub-style receiver, a GitTarget whose applier is a Flux Kustomization, a WatchRule
and the Flux objects; starts every process of the Procfile as a user would (Redis comes from
``GITOPS_REVERSER_REDIS_URL``, which ``make demo`` provides); then makes an API edit and an
outside push and tells what happened to each: the commit, the request, the outcome.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox import manifests as m
from sandbox.cli import Sandbox, start
from sandbox.githost import Hook
from sandbox.paths import REPO_ROOT

NS = "demo"
GROUP = "gitopsreverser.io"
TOKEN = "demo-webhook-secret"
WAIT_S = 90.0
#: Processes of the Procfile the demo runs (the dashboard is left to the user).
PROCESSES = ("watcher", "branch_worker", "dispatcher", "receiver")


def say(text: str) -> None:
    """One line of the story."""
    print(f"demo | {text}", flush=True)


def wait(what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    """Poll another process's visible effect until it shows (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)  # the effect is in another process: nothing to block on
    raise SystemExit(f"demo: timed out waiting for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def procfile() -> dict[str, str]:
    """The Procfile's commands by name."""
    lines = (REPO_ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line and not line.startswith("#"))


class Processes:
    """The product's processes, started from the Procfile with the demo's environment."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self._env = env
        self._logs = logs
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, names: tuple[str, ...]) -> None:
        """Start the named Procfile entries (a restarted one appends to its log)."""
        commands = procfile()
        self._logs.mkdir(parents=True, exist_ok=True)
        for name in names:
            log = (self._logs / f"{name}.log").open("ab")
            self._procs[name] = subprocess.Popen(
                commands[name].strip(),
                shell=True,
                cwd=REPO_ROOT,
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            say(f"started {name}: {commands[name].strip()}  (log: {self._logs / name}.log)")

    def running(self, name: str) -> bool:
        """Whether the named process was started and has not exited."""
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def signal(self, name: str, signum: int, timeout: float = 30.0) -> None:
        """Send ``signum`` to one process (its whole session) and wait until it has exited."""
        proc = self._procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signum)
        proc.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM every process; SIGKILL what has not stopped 30 s later."""
        for proc in self._procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in self._procs.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                say(f"{name} did not stop in 30s; killed")


def environment(directory: Path, receiver_port: int) -> dict[str, str]:
    """The processes' environment: the sandbox's kubeconfig, Redis, short timings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    prom = directory / "prometheus"
    shutil.rmtree(prom, ignore_errors=True)
    prom.mkdir(parents=True)
    env.update(
        {
            "GITOPS_REVERSER_REDIS_URL": os.environ.get(
                "GITOPS_REVERSER_REDIS_URL", "redis://127.0.0.1:6379/0"
            ),
            "GITOPS_REVERSER_KEY_PREFIX": f"demo:{uuid.uuid4().hex[:8]}",
            "GITOPS_REVERSER_KUBECONFIG": str(directory / "kubeconfig"),
            "GITOPS_REVERSER_WORK_DIR": str(directory / "work"),
            "GITOPS_REVERSER_STEADY_TICK": "5s",
            "GITOPS_REVERSER_RECONCILE_PERIOD": "2s",
            "GITOPS_REVERSER_RECEIVER_BIND": f"127.0.0.1:{receiver_port}",
            "GITOPS_REVERSER_RECEIVER_WORKERS": "1",
            "PROMETHEUS_MULTIPROC_DIR": str(prom),
            "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        }
    )
    return env


def configure(sbx: Sandbox, url: str) -> client.ApiClient:
    """The objects a user writes: ours, and Flux's (a GitRepository that never fetches alone)."""
    api = sbx.kube.api_client()
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    core.create_namespaced_secret(
        NS,
        client.V1Secret(metadata=client.V1ObjectMeta(name="webhook"), string_data={"token": TOKEN}),
    )
    receiver = {"type": "github", "secretRef": {"name": "webhook"}}
    applier = m.kustomization_applier(NS, "apps", quietPeriod="3s")
    for body in (
        m.cluster_provider(),
        m.git_provider(NS, "demo", url, push={"commitWindow": "1s"}, receiver=receiver),
        m.git_target(NS, "apps", "demo", "clusters/demo", applier=applier),
        m.watch_rule(NS, "configs", "apps", ["configmaps"]),
        m.git_repository(NS, "demo", url),
        m.kustomization(NS, "apps", "demo", "./clusters/demo", prune=False),
    ):
        m.create(api, body)
    say(
        "configured: GitProvider demo (receiver: github), GitTarget apps -> clusters/demo, "
        "WatchRule configmaps, Flux GitRepository demo (interval 24h) + Kustomization apps"
    )
    return api


def _git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Someone Else",
        "GIT_AUTHOR_EMAIL": "se@example.com",
        "GIT_COMMITTER_NAME": "Someone Else",
        "GIT_COMMITTER_EMAIL": "se@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()


def _get(custom: client.CustomObjectsApi, group: str, plural: str, name: str) -> dict[str, Any]:
    version = "v1alpha1" if group == GROUP else "v1"
    obj: dict[str, Any] = custom.get_namespaced_custom_object(group, version, NS, plural, name)  # type: ignore[assignment]
    return obj


def _ks_status(custom: client.CustomObjectsApi) -> dict[str, Any]:
    ks = _get(custom, "kustomize.toolkit.fluxcd.io", "kustomizations", "apps")
    return dict(ks.get("status") or {})


def _tip(bare: Path) -> str:
    return _git("rev-parse", "main", cwd=bare)


def story(sbx: Sandbox, api: client.ApiClient, directory: Path, receiver_port: int) -> None:
    """The scripted API edit and outside push, told as they happen."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    bare = sbx.githost.repo_path("demo")
    path = wait(
        "the receiver's webhook path",
        lambda: (
            _get(custom, GROUP, "gitproviders", "demo")
            .get("status", {})
            .get("receiver", {})
            .get("webhookPath")
        ),
    )
    sbx.githost.add_hook(
        "demo", Hook(f"http://127.0.0.1:{receiver_port}{path}", "github", "form", TOKEN)
    )
    say(f"the Git host now sends signed GitHub webhooks (form-encoded) to {path[:18]}...")
    before = _tip(bare)
    core.create_namespaced_config_map(
        NS,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="hello"), data={"greeting": "hello from the API"}
        ),
    )
    say("1. API edit: kubectl create configmap hello -n demo --from-literal=greeting=...")
    commit = wait("the commit", lambda: (t := _tip(bare)) != before and t)
    say(
        f"   committed and pushed {commit[:12]}: "
        f"{_git('log', '-1', '--format=%s (%an)', commit, cwd=bare)}"
    )
    say("   file clusters/demo/demo/configmaps/hello.yaml:")
    for line in _git(
        "show", f"{commit}:clusters/demo/demo/configmaps/hello.yaml", cwd=bare
    ).splitlines():
        say(f"     {line}")
    applied = wait(
        "Flux to catch up",
        lambda: _ks_status(custom).get("lastAppliedRevision", "").endswith(commit),
    )
    say(
        f"   CatchUp: after a quiet period of 3s Flux was asked, and applied {commit[:12]} "
        f"({bool(applied)})"
    )
    clone = directory / "outside-clone"
    shutil.rmtree(clone, ignore_errors=True)
    _git("clone", "-q", sbx.githost.repo_url("demo"), str(clone), cwd=directory)
    target = clone / "clusters/demo/demo/configmaps/from-git.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n"
        "  namespace: demo\ndata:\n  greeting: hello from Git\n"
    )
    _git("add", "-A", cwd=clone)
    _git("commit", "-qm", "Add from-git", cwd=clone)
    _git("push", "-q", "origin", "HEAD:main", cwd=clone)
    outside = _tip(bare)
    say(
        f"2. Outside push: someone pushes {outside[:12]} (adds from-git.yaml); the Git host "
        "sends its webhook"
    )
    wait(
        "Flux to apply the outside commit",
        lambda: _ks_status(custom).get("lastAppliedRevision", "").endswith(outside),
    )
    data = core.read_namespaced_config_map("from-git", NS).data
    say(
        f"   ForeignCommit: Flux applied {outside[:12]}; configmap from-git is in the "
        f"cluster: {data}"
    )
    _events(core)
    last = wait(
        "status.applier.lastRequest to show the ForeignCommit",
        lambda: (
            (
                r := _get(custom, GROUP, "gittargets", "apps")
                .get("status", {})
                .get("applier", {})
                .get("lastRequest")
            )
            and r.get("commit") == outside
            and r.get("outcome")
            and r
        ),
    )
    say(
        f"   GitTarget apps status.applier.lastRequest: reasons={last.get('reasons')} "
        f"outcome={last.get('outcome')} ({last.get('message', '')})"
    )
    with urllib.request.urlopen(f"http://127.0.0.1:{receiver_port}/metrics", timeout=10) as page:
        lines = [
            ln
            for ln in page.read().decode().splitlines()
            if ln.startswith("receiver_deliveries_total") and not ln.endswith(" 0.0")
        ]
    for line in lines:
        say(f"   receiver /metrics: {line}")


def _events(core: client.CoreV1Api) -> None:
    for event in core.list_namespaced_event(NS).items:
        if event.reason == "ApplyRequested":
            say(f"   Event ApplyRequested on GitTarget apps: {event.message}")


def main(argv: list[str] | None = None) -> int:
    """Run the demo."""
    parser = argparse.ArgumentParser(prog="python -m sandbox demo")
    parser.add_argument("--dir", default=".demo")
    args = parser.parse_args(argv)
    directory = Path(args.dir).resolve()
    shutil.rmtree(directory, ignore_errors=True)
    sbx = start(directory)
    say(f"sandbox: Kubernetes API {sbx.kube.url}, Git host {sbx.githost.url}, Flux doubles")
    port = free_port()
    procs = Processes(environment(directory, port), directory / "logs")
    try:
        api = configure(sbx, sbx.githost.repo_url("demo"))
        procs.start(PROCESSES)
        story(sbx, api, directory, port)
        say("done. Logs are in " + str(directory / "logs"))
    finally:
        procs.stop()
        sbx.stop()
    return 0
