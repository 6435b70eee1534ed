"""Git credentials of a branch, read from its GitProvider's Secret when the branch is taken.

Credentials never enter Redis (R5): the watcher publishes only the Secret's name, and the
branch's owner resolves it through ``shared.git.credentials`` (the same resolver as the
dispatcher and the watcher's probe), which reads the Secret through the Kubernetes API and
hands git an environment that keeps it out of URLs, ``.git/config`` and logs. The SSH files
stay in one private folder per branch, because the branch's working copy fetches and pushes
with them for as long as the branch is owned.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

from shared.git.credentials import SecretMissing, resolve
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
            return resolve(
                self._reader().secret_data,
                config.provider_namespace,
                config.secret_name,
                self._ssh_dir / bk,
            )
        except (KubeError, SecretMissing) as err:
            # the branch is still worked: the push fails and is retried once the Secret is back
            log.warning(
                "cannot read the credentials of branch %s: %s", bk, err, extra={"branch": bk}
            )
            return {}
