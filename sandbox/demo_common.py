"""What both stories of ``python -m sandbox demo`` (Flux, Argo CD) share: printing a line,
waiting for another process's effect, reading objects, hooking the Git host to a receiver,
pushing from outside, and reading back what the product recorded on a GitTarget.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox.githost import Hook
from sandbox.githost.outside import git, push
from sandbox.stack import Sandbox

GROUP = "gitopsreverser.io"
#: The webhook secret each story's GitProvider receiver and the Git host share.
TOKEN = "demo-webhook-secret"
WAIT_S = 90.0


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


def get(api: client.ApiClient, ns: str, api_version: str, plural: str, name: str) -> dict[str, Any]:
    """A namespaced custom object, by its ``group/version``."""
    group, _, version = api_version.rpartition("/")
    custom = client.CustomObjectsApi(api)
    obj: dict[str, Any] = custom.get_namespaced_custom_object(group, version, ns, plural, name)  # type: ignore[assignment]
    return obj


def ours(api: client.ApiClient, ns: str, plural: str, name: str) -> dict[str, Any]:
    """One of our objects (GitProvider, GitTarget) in ``ns``."""
    return get(api, ns, f"{GROUP}/v1alpha1", plural, name)


def tip(bare: Path) -> str:
    """The tip of ``main`` in a bare repository."""
    return git("rev-parse", "main", cwd=bare)


def secret(api: client.ApiClient, ns: str) -> None:
    """The namespace and the receiver's webhook Secret in it."""
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="webhook"), string_data={"token": TOKEN}
    )
    core.create_namespaced_secret(ns, body)


def hook(sbx: Sandbox, api: client.ApiClient, ns: str, repo: str, port: int) -> None:
    """Point the Git host's webhook for ``repo`` at the receiver of GitProvider ``ns/demo``."""
    path = wait(
        "the receiver's webhook path",
        lambda: (
            ours(api, ns, "gitproviders", "demo")
            .get("status", {})
            .get("receiver", {})
            .get("webhookPath")
        ),
    )
    sbx.githost.add_hook(repo, Hook(f"http://127.0.0.1:{port}{path}", "github", "form", TOKEN))
    say(f"the Git host now sends signed GitHub webhooks (form-encoded) to {path[:18]}...")


def push_file(sbx: Sandbox, repo: str, clone: Path, path: str, text: str) -> str:
    """Someone else adds ``path`` in a fresh clone ``clone`` and pushes it; the commit."""
    shutil.rmtree(clone, ignore_errors=True)
    message = f"Add {Path(path).stem}"
    return push(sbx.githost.repo_url(repo), clone, {path: text}, message)


def configmap_yaml(name: str, ns: str, greeting: str) -> str:
    """A ConfigMap's document, as the product renders one (so mirroring it writes nothing)."""
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
        f"  namespace: {ns}\ndata:\n  greeting: {greeting}\n"
    )


def show_commit(bare: Path, commit: str, path: str) -> None:
    """Print a commit's subject and author, and one file of it."""
    say(
        f"   committed and pushed {commit[:12]}: "
        f"{git('log', '-1', '--format=%s (%an)', commit, cwd=bare)}"
    )
    say(f"   file {path}:")
    for line in git("show", f"{commit}:{path}", cwd=bare).splitlines():
        say(f"     {line}")


def events(api: client.ApiClient, ns: str) -> None:
    """Print the ApplyRequested Events of ``ns`` (one per request the dispatcher made)."""
    for event in client.CoreV1Api(api).list_namespaced_event(ns).items:
        if event.reason == "ApplyRequested":
            say(f"   Event ApplyRequested on GitTarget apps: {event.message}")


def last_request(api: client.ApiClient, ns: str, commit: str) -> None:
    """Wait for GitTarget ``ns/apps`` to show its request for ``commit``, outcome and all; print
    it."""
    last = wait(
        "status.applier.lastRequest to show the request",
        lambda: (
            (
                r := ours(api, ns, "gittargets", "apps")
                .get("status", {})
                .get("applier", {})
                .get("lastRequest")
            )
            and r.get("commit") == commit
            and r.get("outcome")
            and r
        ),
    )
    say(
        f"   GitTarget apps status.applier.lastRequest: reasons={last.get('reasons')} "
        f"outcome={last.get('outcome')} ({last.get('message', '')})"
    )
