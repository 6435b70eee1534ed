"""``python -m sandbox demo``: the product end to end on the sandbox, as short stories.

Starts the sandbox (Kubernetes API double, Git host, Flux and Argo CD doubles) and every
process of the Procfile as a user would (Redis comes from ``GITOPS_REVERSER_REDIS_URL``, which
``make demo`` provides), then tells one story per applier (``--story flux``, ``argocd`` or
``both``, the default), each in a namespace and repository of its own: an API edit and an
outside push, and what happened to each: the commit, the request, the outcome.

The Flux story: a GitProvider with a GitHub-style receiver, a GitTarget whose applier is a
Flux Kustomization, a WatchRule and the Flux objects. The Argo CD story is
``sandbox.demo_argocd``.
"""

from __future__ import annotations

import argparse
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox import demo_argocd
from sandbox import manifests as m
from sandbox.demo_common import (
    configmap_yaml,
    events,
    get,
    hook,
    last_request,
    push_file,
    say,
    secret,
    show_commit,
    tip,
    wait,
)
from sandbox.processes import Processes, environment, free_port
from sandbox.stack import Sandbox, start

NS = "demo"
REPO = "demo"
FOLDER = "clusters/demo"
STORIES = ("flux", "argocd", "both")
#: Processes of the Procfile the demo runs (the dashboard is left to the user).
PROCESSES = ("watcher", "branch_worker", "dispatcher", "receiver")


def configure(sbx: Sandbox, api: client.ApiClient) -> None:
    """The objects a user writes: ours, and Flux's (a GitRepository that never fetches alone)."""
    url = sbx.githost.repo_url(REPO)
    secret(api, NS)
    receiver = {"type": "github", "secretRef": {"name": "webhook"}}
    applier = m.kustomization_applier(NS, "apps", quietPeriod="3s")
    for body in (
        m.git_provider(NS, "demo", url, push={"commitWindow": "1s"}, receiver=receiver),
        m.git_target(NS, "apps", "demo", FOLDER, applier=applier),
        m.watch_rule(NS, "configs", "apps", ["configmaps"]),
        m.git_repository(NS, "demo", url),
        m.kustomization(NS, "apps", "demo", f"./{FOLDER}", prune=False),
    ):
        m.create(api, body)
    say(
        f"configured ({NS}): GitProvider demo (receiver: github), GitTarget apps -> {FOLDER}, "
        "WatchRule configmaps, Flux GitRepository demo (interval 24h) + Kustomization apps"
    )


def _ks_status(api: client.ApiClient) -> dict[str, Any]:
    ks = get(api, NS, m.KUSTOMIZE, "kustomizations", "apps")
    return dict(ks.get("status") or {})


def _applied(api: client.ApiClient, commit: str) -> bool:
    return str(_ks_status(api).get("lastAppliedRevision", "")).endswith(commit)


def story(sbx: Sandbox, api: client.ApiClient, directory: Path, receiver_port: int) -> None:
    """The scripted API edit and outside push, told as they happen."""
    say(f"--- Flux story: GitTarget {NS}/apps, applier Kustomization {NS}/apps ---")
    core = client.CoreV1Api(api)
    bare = sbx.githost.repo_path(REPO)
    hook(sbx, api, NS, REPO, receiver_port)
    before = tip(bare)
    core.create_namespaced_config_map(
        NS,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="hello"), data={"greeting": "hello from the API"}
        ),
    )
    say(f"1. API edit: kubectl create configmap hello -n {NS} --from-literal=greeting=...")
    commit = wait("the commit", lambda: (t := tip(bare)) != before and t)
    show_commit(bare, commit, f"{FOLDER}/{NS}/configmaps/hello.yaml")
    applied = wait("Flux to catch up", lambda: _applied(api, commit))
    say(
        f"   CatchUp: after a quiet period of 3s Flux was asked, and applied {commit[:12]} "
        f"({bool(applied)})"
    )
    path = f"{FOLDER}/{NS}/configmaps/from-git.yaml"
    text = configmap_yaml("from-git", NS, "hello from Git")
    outside = push_file(sbx, REPO, directory / "outside-clone", path, text)
    say(
        f"2. Outside push: someone pushes {outside[:12]} (adds from-git.yaml); the Git host "
        "sends its webhook"
    )
    wait("Flux to apply the outside commit", lambda: _applied(api, outside))
    data = core.read_namespaced_config_map("from-git", NS).data
    say(
        f"   ForeignCommit: Flux applied {outside[:12]}; configmap from-git is in the "
        f"cluster: {data}"
    )
    events(api, NS)
    last_request(api, NS, outside)


def _metrics(receiver_port: int) -> None:
    """The receiver's delivery counters, as Prometheus reads them."""
    with urllib.request.urlopen(f"http://127.0.0.1:{receiver_port}/metrics", timeout=10) as page:
        lines = [
            ln
            for ln in page.read().decode().splitlines()
            if ln.startswith("gitops_reverser_receiver_deliveries_total")
            and not ln.endswith(" 0.0")
        ]
    for line in lines:
        say(f"receiver /metrics: {line}")


def main(argv: list[str] | None = None) -> int:
    """Run the demo."""
    parser = argparse.ArgumentParser(prog="python -m sandbox demo")
    parser.add_argument("--dir", default=".demo")
    parser.add_argument("--story", choices=STORIES, default="both")
    args = parser.parse_args(argv)
    flux, argocd = args.story in ("flux", "both"), args.story in ("argocd", "both")
    directory = Path(args.dir).resolve()
    shutil.rmtree(directory, ignore_errors=True)
    sbx = start(directory, flux=flux, argocd=argocd)
    doubles = " and ".join(d for d, on in (("Flux", flux), ("Argo CD", argocd)) if on)
    say(f"sandbox: Kubernetes API {sbx.kube.url}, Git host {sbx.githost.url}, {doubles} doubles")
    port = free_port()
    procs = Processes(environment(directory, port), directory / "logs", say)
    try:
        api = sbx.api_client()
        m.create(api, m.cluster_provider())
        if flux:
            configure(sbx, api)
        if argocd:
            demo_argocd.configure(sbx, api)
        procs.start(PROCESSES)
        if flux:
            story(sbx, api, directory, port)
        if argocd:
            demo_argocd.story(sbx, api, directory, port)
        _metrics(port)
        say("done. Logs are in " + str(directory / "logs"))
    finally:
        procs.stop()
        sbx.stop()
    return 0
