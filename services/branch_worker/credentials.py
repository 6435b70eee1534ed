"""Git credentials of a branch, read from its GitProvider's Secret when the branch is taken.

Credentials never enter Redis (R5): the watcher publishes only the Secret's name, and the
branch's owner reads the Secret through the Kubernetes API and hands git an environment
(``shared.git.auth``) that keeps them out of URLs, ``.git/config`` and logs.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

from shared.git.auth import http_auth_env, ssh_env
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.model.ids import BranchKey
from shared.store.config import ConfigStore

log = logging.getLogger(__name__)


class SecretCredentials:
    """A CredentialSource that reads the GitProvider's ``spec.secretRef`` Secret."""

    def __init__(
        self, reader: Callable[[], CrdReader], configs: ConfigStore, ssh_dir: Path | None = None
    ) -> None:
        self._reader = reader  # built on first use: branches without a Secret need no cluster
        self._configs = configs
        self._ssh_dir = ssh_dir or Path(tempfile.mkdtemp(prefix="gitops-reverser-ssh-"))

    def __call__(self, bk: BranchKey) -> dict[str, str]:
        config = self._configs.branch(bk)
        if config is None or not config.secret_name:
            return {}
        try:
            secret = self._reader().secret_data(config.provider_namespace, config.secret_name)
        except KubeError as err:
            log.warning(
                "cannot read the credentials of branch %s: %s", bk, err, extra={"branch": bk}
            )
            return {}
        if secret is None:
            log.warning(
                "Secret %s/%s of branch %s is missing",
                config.provider_namespace,
                config.secret_name,
                bk,
                extra={"branch": bk},
            )
            return {}
        folder = self._ssh_dir / bk
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return {**http_auth_env(secret), **ssh_env(secret, folder)}
