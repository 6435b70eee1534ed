"""The Redis state the product's processes would leave, written with the product's own stores
(the watcher publishes a GitTarget's config, the branch worker its push, an applier's debt)."""

from __future__ import annotations

from dataclasses import replace

import redis

from services.branch_worker.stores import Stores
from shared.model.config import ApplierRef, TargetConfig
from shared.model.ids import GitTargetUid
from shared.settings import Settings
from tests.configs import branch_config, target_config

URL = "http://git.example/team/config"
APPLIER = ApplierRef("Kustomization", "team", "apps", "default")


def stores(client: redis.Redis, prefix: str) -> Stores:
    return Stores.build(client, Settings(key_prefix=prefix))


def publish_target(s: Stores, uid: str, name: str, path: str = "clusters/team") -> TargetConfig:
    """What the watcher publishes for a served GitTarget."""
    config = target_config(GitTargetUid(uid), "team", name, URL, "main", path=path, applier=APPLIER)
    s.configs.publish_served(branch_config(URL), [config])
    return config


def pushed(s: Stores, config: TargetConfig, sha: str, at: float) -> None:
    """What the branch's owner publishes after a push landed."""
    lease = s.leases.acquire(config.ref.key, "worker-1")
    assert lease is not None
    s.states.publish_pushed(lease, sha, at=at)


def owe_foreign_commit(s: Stores, uid: str, sha: str) -> None:
    """An outside commit the applier is owed for the GitTarget (A1)."""
    s.appliers.amend(
        APPLIER.key,
        APPLIER.kind,
        lambda a: replace(a, foreign_commit=sha, foreign_uids=frozenset({uid})),
    )
