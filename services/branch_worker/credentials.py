"""Git credentials of a branch, read from its GitProvider's Secret when the branch is taken.

Credentials never enter Redis (R5): the watcher publishes only the Secret's name, and the
branch's owner resolves it through ``shared.git.credentials`` (the same resolver as the
dispatcher and the watcher's probe), which reads the Secret through the Kubernetes API and
hands git an environment that keeps it out of URLs, ``.git/config`` and logs. The SSH files
stay in one private folder per branch, because the branch's working copy fetches and pushes
with them for as long as the branch is owned. A branch whose Secret is gone, or holds no
identity any more, has its folder removed when its credentials are read again; the folder of
all branches is one per process and is removed when the process ends (T3).
"""

from __future__ import annotations

import logging
import shutil
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
        self._owned = ssh_dir is None  # our own temporary folder: removed by ``close``
        self._ssh_dir = ssh_dir or Path(tempfile.mkdtemp(prefix="gitops-reverser-ssh-"))

    def __call__(self, bk: BranchKey) -> dict[str, str]:
        folder = self._ssh_dir / bk
        config = self._configs.branch(bk)
        if config is None or not config.secret_name:
            self.forget(bk)
            return {}
        try:
            env = resolve(
                self._reader().secret_data,
                config.provider_namespace,
                config.secret_name,
                folder,
            )
        except (KubeError, SecretMissing) as err:
            # the branch is still worked: the push fails and is retried once the Secret is back
            if isinstance(err, SecretMissing):
                self.forget(bk)  # the Secret is gone: so is any key we wrote from it
            log.warning(
                "cannot read the credentials of branch %s: %s", bk, err, extra={"branch": bk}
            )
            return {}
        if "GIT_SSH_COMMAND" not in env:
            self.forget(bk)  # no identity (any more): no key on disk
        return env

    def forget(self, bk: BranchKey) -> None:
        """Remove the SSH files of a branch."""
        shutil.rmtree(self._ssh_dir / bk, ignore_errors=True)

    def close(self) -> None:
        """Remove every SSH file this process wrote (at exit)."""
        if self._owned:
            shutil.rmtree(self._ssh_dir, ignore_errors=True)
