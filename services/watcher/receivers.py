"""Publish each GitProvider's push webhook for the receiver (R1, R5) and its path in status.

For every GitProvider with ``spec.receiver``, the watcher reads the webhook token from its
Secret, derives the path ``/hook/<hex sha256(token + name + namespace)>`` (so the path names no
object and cannot be guessed), publishes the record the receiver looks the path up by (no
secret in it: the receiver reads the token from the Secret itself), and writes
``status.receiver.webhookPath`` when it changed. Records of receivers that are gone are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_PROVIDERS
from shared.model.crds import GitProviderView, GitTargetView
from shared.model.receivers import RECEIVER_TYPES, TOKEN_KEY, ReceiverRecord, webhook_digest
from shared.store.receivers import ReceiverDirectory

log = logging.getLogger(__name__)


def publish_receivers(
    providers: Iterable[GitProviderView],
    targets: Iterable[GitTargetView],
    reader: CrdReader,
    client: KubeClient,
    directory: ReceiverDirectory,
) -> set[str]:
    """Publish every receiver; returns the digests published now."""
    branches: dict[tuple[str, str], set[str]] = {}
    for target in targets:
        branches.setdefault((target.meta.namespace, target.provider), set()).add(target.branch)
    live: set[str] = set()
    for provider in providers:
        if provider.receiver_type not in RECEIVER_TYPES or not provider.receiver_secret:
            continue
        secret = reader.secret_data(provider.meta.namespace, provider.receiver_secret) or {}
        token = secret.get(TOKEN_KEY, b"")
        if not token:
            continue  # no token: no endpoint (the receiver refuses empty secrets anyway)
        digest = webhook_digest(token, provider.meta.name, provider.meta.namespace)
        key = (provider.meta.namespace, provider.meta.name)
        directory.publish(
            digest,
            ReceiverRecord(
                provider.meta.namespace,
                provider.meta.name,
                provider.receiver_type,
                provider.receiver_secret,
                provider.url,
                tuple(sorted(branches.get(key, ()))),
            ),
        )
        live.add(digest)
        _write_path(client, provider, "/hook/" + digest)
    for stale in directory.published() - live:
        directory.forget(stale)
    return live


def _write_path(client: KubeClient, provider: GitProviderView, path: str) -> None:
    if provider.webhook_path == path:
        return
    try:
        client.patch_status(
            GIT_PROVIDERS,
            provider.meta.namespace,
            provider.meta.name,
            {"status": {"receiver": {"webhookPath": path}}},
        )
    except KubeError as err:
        log.warning(
            "cannot write the webhook path of %s/%s: %s",
            provider.meta.namespace,
            provider.meta.name,
            err,
        )
