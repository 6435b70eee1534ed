"""Set-ups several tiers share: the environment of a product process a test starts, one pass of
the watcher over a sandbox cluster, a dispatcher's world on the test Redis, and a branch whose
tip an applier is owed.

Each test passes its own key prefix (the ``key_prefix`` fixture), so tests that use these run
side by side (pytest-xdist) without seeing each other's keys.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from kubernetes import client
from kubernetes.client import ApiClient

from sandbox.githost.outside import git
from sandbox.kube.server import KubeApiServer
from services.dispatcher.jobs import Context
from shared.kube.clients import ClientFactory
from shared.model.config import ApplierRef
from shared.model.ids import BranchKey
from shared.model.requests import ApplyRequest
from shared.settings import Settings
from shared.store.keys import Keys
from shared.store.leases import Leases
from tests.configs import branch_config


def process_env(
    key_prefix: str | None = None, *, redis_url: str | None = None, **settings: str
) -> dict[str, str]:
    """The environment of a product process a test starts: this process's, less every
    ``GITOPS_REVERSER_`` variable, plus the Redis (the test Redis unless ``redis_url``), the
    key prefix when given, and ``settings`` (``work_dir="/x"`` is GITOPS_REVERSER_WORK_DIR)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    env["GITOPS_REVERSER_REDIS_URL"] = redis_url or Settings.from_env().redis_url
    if key_prefix is not None:
        env["GITOPS_REVERSER_KEY_PREFIX"] = key_prefix
    env.update({f"GITOPS_REVERSER_{name.upper()}": value for name, value in settings.items()})
    return env


def watcher_burst(kube: KubeApiServer, folder: Path, key_prefix: str) -> None:
    """One pass of the watcher process (``--burst``) over the sandbox cluster ``kube``: it
    publishes what the objects configure and writes their status."""
    kubeconfig = folder / "kubeconfig"
    kube.write_kubeconfig(kubeconfig)
    subprocess.run(
        [sys.executable, "-m", "services.watcher", "--burst"],
        env=process_env(key_prefix, kubeconfig=str(kubeconfig)),
        check=True,
        timeout=120,
        capture_output=True,
    )


def gittarget(kube: KubeApiServer, namespace: str, name: str) -> dict[str, Any]:
    """A GitTarget as the API server holds it."""
    found: dict[str, Any] = client.CustomObjectsApi(kube.api_client()).get_namespaced_custom_object(
        "gitopsreverser.io", "v1alpha1", namespace, "gittargets", name
    )
    return found


def dispatcher_settings(key_prefix: str) -> Settings:
    """A dispatcher's settings on the test Redis: the prefix's keys and an apply queue of its
    own."""
    return Settings(
        redis_url=Settings.from_env().redis_url,
        key_prefix=key_prefix,
        apply_queue=f"{key_prefix}-q",
    )


def dispatcher_context(
    client: redis.Redis,
    key_prefix: str,
    local: ApiClient,
    clock: Callable[[], float] = time.time,
) -> Context:
    """What a dispatcher's job is built with (``dispatcher_settings``), its local cluster the
    API server behind ``local``."""
    settings = dispatcher_settings(key_prefix)
    return Context.build(settings, client, ClientFactory(settings, clock, local=local))


def tip_of(url: str, branch: str = "main") -> str:
    """The branch's tip as the remote tells it."""
    return git("ls-remote", url, f"refs/heads/{branch}").split()[0]


def owned_at_tip(
    ctx: Context,
    client: redis.Redis,
    url: str,
    namespace: str,
    provider: str,
    *,
    branch: str = "main",
    tip: str | None = None,
    owner: str = "t",
) -> tuple[BranchKey, str]:
    """The branch published as a GitProvider's, held by ``owner`` and published at ``tip``
    (the remote's, unless given), as a branch worker that took it leaves it; its key and tip."""
    bk = ctx.configs.publish_branch(branch_config(url, branch, namespace, provider))
    lease = Leases(client, Keys(ctx.settings.key_prefix), 60_000).acquire(bk, owner)
    assert lease is not None
    at = tip or tip_of(url, branch)
    ctx.states.publish_tip(lease, at)
    return bk, at


def foreign_commit_request(
    bk: BranchKey, url: str, tip: str, target_uid: str, applier: ApplierRef, *, branch: str = "main"
) -> ApplyRequest:
    """A request, sent now, that ``applier`` apply ``tip``: an outside commit on the branch of
    the GitTarget ``target_uid`` (a ForeignCommit)."""
    return ApplyRequest(
        uuid.uuid4().hex,
        bk,
        url,
        branch,
        tip,
        {"ForeignCommit": [target_uid]},
        applier,
        time.time(),
    )
