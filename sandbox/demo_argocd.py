"""The Argo CD story of ``python -m sandbox demo``: docs/argocd.md on the Argo CD double.

Its own namespace ``demo-argo`` and repository ``demo-argo``: a GitProvider with a GitHub
receiver, a GitTarget whose applier is the Application ``demo-argo/apps`` (automated sync off
with ``prune: true`` kept, the folder read with ``directory.recurse: true``), a WatchRule for
ConfigMaps. The Application lives in the tenant's own namespace, which the double allows (it
watches Applications in every namespace). An API edit becomes a commit and nothing is synced
(an Application is never owed a CatchUp); an outside push is synced by one operation the
product sets, pinned to that commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox import manifests as m
from sandbox.demo_common import (
    configmap_yaml,
    events,
    get,
    hook,
    last_request,
    ours,
    push_file,
    say,
    secret,
    show_commit,
    tip,
    wait,
)
from sandbox.stack import Sandbox

NS = "demo-argo"
REPO = "demo-argo"
FOLDER = "clusters/demo-argo"
TRACKING = "argocd.argoproj.io/tracking-id"


def configure(sbx: Sandbox, api: client.ApiClient) -> None:
    """The objects a user writes for an Argo CD tenant (the ClusterProvider is the Flux
    story's, admitting every namespace)."""
    # The folder exists before the Application does: Argo CD compares at once, and a missing
    # path is a ComparisonError that fails every sync until the next comparison.
    readme = b"The folder of GitTarget demo-argo/apps.\n"
    sbx.githost.create_repo(REPO, files={"README.md": readme, f"{FOLDER}/README.md": readme})
    url = sbx.githost.repo_url(REPO)
    secret(api, NS)
    receiver = {"type": "github", "secretRef": {"name": "webhook"}}
    for body in (
        m.git_provider(NS, "demo", url, push={"commitWindow": "1s"}, receiver=receiver),
        m.git_target(NS, "apps", "demo", FOLDER, applier=m.application_applier(NS, "apps")),
        m.watch_rule(NS, "configs", "apps", ["configmaps"]),
        m.application(NS, "apps", url, FOLDER, NS),
    ):
        m.create(api, body)
    say(
        f"configured ({NS}): GitProvider demo (receiver: github), GitTarget apps -> {FOLDER}, "
        "WatchRule configmaps, Argo CD Application apps (automated sync off, prune kept, "
        "directory.recurse)"
    )


def _app(api: client.ApiClient) -> dict[str, Any]:
    return get(api, NS, m.ARGOCD, "applications", "apps")


def _synced(api: client.ApiClient, commit: str) -> dict[str, Any] | None:
    """``status.operationState`` once an operation finished syncing ``commit``."""
    state = (_app(api).get("status") or {}).get("operationState") or {}
    done = state.get("phase") in ("Succeeded", "Failed", "Error")
    return state if done and (state.get("syncResult") or {}).get("revision") == commit else None


def _configured(api: client.ApiClient) -> dict[str, Any] | None:
    conditions = ours(api, NS, "gittargets", "apps").get("status", {}).get("conditions") or []
    found = [c for c in conditions if c.get("type") == "ApplierConfigured"]
    return found[0] if found and found[0].get("status") == "True" else None


def story(sbx: Sandbox, api: client.ApiClient, directory: Path, receiver_port: int) -> None:
    """The scripted API edit and outside push, told as they happen."""
    say("--- Argo CD story: GitTarget demo-argo/apps, applier Application demo-argo/apps ---")
    core = client.CoreV1Api(api)
    bare = sbx.githost.repo_path(REPO)
    hook(sbx, api, NS, REPO, receiver_port)
    condition = wait("ApplierConfigured=True", lambda: _configured(api))
    say(f"   GitTarget apps: ApplierConfigured=True ({condition.get('message', '')})")
    before = tip(bare)
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="hello"), data={"greeting": "hello from the API"}
    )
    core.create_namespaced_config_map(NS, body)
    say(f"1. API edit: kubectl create configmap hello -n {NS} --from-literal=greeting=...")
    commit = wait("the commit", lambda: (t := tip(bare)) != before and t)
    show_commit(bare, commit, f"{FOLDER}/{NS}/configmaps/hello.yaml")
    say(
        "   no sync: an Application is never asked to catch up after our own push "
        f"(operation set now: {bool(_app(api).get('operation'))})"
    )
    name = "from-git"
    path = f"{FOLDER}/{NS}/configmaps/{name}.yaml"
    text = configmap_yaml(name, NS, "hello from Git")
    outside = push_file(sbx, REPO, directory / "outside-argo", path, text)
    say(
        f"2. Outside push: someone pushes {outside[:12]} (adds {name}.yaml); the Git host "
        "sends its webhook"
    )
    state = wait("Argo CD to sync the outside commit", lambda: _synced(api, outside))
    operation = state.get("operation") or {}
    revision = (operation.get("sync") or {}).get("revision")
    say("   ForeignCommit: the product set the Application's operation; Argo CD ran it:")
    say(f"     status.operationState.operation.sync.revision: {revision}")
    say(f"     status.operationState.operation.initiatedBy:   {operation.get('initiatedBy')}")
    say(
        f"     status.operationState.phase: {state.get('phase')} "
        f"(syncResult.revision {str(state.get('syncResult', {}).get('revision'))[:12]})"
    )
    made = core.read_namespaced_config_map(name, NS)
    annotations = (made.metadata.annotations if made.metadata else None) or {}
    say(
        f"   configmap {name} is in the cluster: {made.data}; "
        f"{TRACKING}: {annotations.get(TRACKING)}"
    )
    events(api, NS)
    last_request(api, NS, outside)
    history = (_app(api).get("status") or {}).get("history") or []
    revisions = [str(h.get("revision", ""))[:12] for h in history]
    say(f"   Application apps status.history (every sync Argo CD ran): {revisions}")
    now = tip(bare)
    after = "the outside commit: no commit followed the sync" if now == outside else "moved"
    say(
        f"   the API edit's commit {commit[:12]} was never synced (the cluster already held it); "
        f"the branch's tip now: {now[:12]} ({after})"
    )
