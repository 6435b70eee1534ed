"""``python -m sandbox demo``: the product end to end on the sandbox, as a short story.

Starts the sandbox (Kubernetes API double, Git host, Flux doubles), configures a GitProvider
with a GitHub-style receiver, a GitTarget whose applier is a Flux Kustomization, a WatchRule
and the Flux objects; starts every process of the Procfile as a user would (Redis comes from
``GITOPS_REVERSER_REDIS_URL``, which ``make demo`` provides); then makes an API edit and an
outside push and tells what happened to each: the commit, the request, the outcome.
"""

from __future__ import annotations

import argparse
import shutil
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox import manifests as m
from sandbox.githost import Hook
from sandbox.githost.outside import git, push
from sandbox.processes import Processes, environment, free_port
from sandbox.stack import Sandbox, start

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


def _get(custom: client.CustomObjectsApi, group: str, plural: str, name: str) -> dict[str, Any]:
    version = "v1alpha1" if group == GROUP else "v1"
    obj: dict[str, Any] = custom.get_namespaced_custom_object(group, version, NS, plural, name)  # type: ignore[assignment]
    return obj


def _ks_status(custom: client.CustomObjectsApi) -> dict[str, Any]:
    ks = _get(custom, "kustomize.toolkit.fluxcd.io", "kustomizations", "apps")
    return dict(ks.get("status") or {})


def _tip(bare: Path) -> str:
    return git("rev-parse", "main", cwd=bare)


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
        f"{git('log', '-1', '--format=%s (%an)', commit, cwd=bare)}"
    )
    say("   file clusters/demo/demo/configmaps/hello.yaml:")
    for line in git(
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
    shutil.rmtree(directory / "outside-clone", ignore_errors=True)
    push(
        sbx.githost.repo_url("demo"),
        directory / "outside-clone",
        {
            "clusters/demo/demo/configmaps/from-git.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n"
                "  namespace: demo\ndata:\n  greeting: hello from Git\n"
            )
        },
        "Add from-git",
    )
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
            if ln.startswith("gitops_reverser_receiver_deliveries_total")
            and not ln.endswith(" 0.0")
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
    procs = Processes(environment(directory, port), directory / "logs", say)
    try:
        api = configure(sbx, sbx.githost.repo_url("demo"))
        procs.start(PROCESSES)
        story(sbx, api, directory, port)
        say("done. Logs are in " + str(directory / "logs"))
    finally:
        procs.stop()
        sbx.stop()
    return 0
