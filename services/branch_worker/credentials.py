"""Git credentials of a branch, read from its GitProvider's Secret when the branch is taken.

Credentials never enter Redis (R5): the watcher publishes only the Secret's name, and the
branch's owner resolves it through ``shared.git.credentials`` (the same resolver as the
dispatcher and the watcher's probe), which reads the Secret through the Kubernetes API and
hands git an environment that keeps it out of URLs, ``.git/config`` and logs. The SSH files
stay in one private folder per branch, because the branch's working copy fetches and pushes
with them for as long as the branch is owned. A branch whose Secret is gone, or holds no
identity any more, has its folder removed when its credentials are read again, and a branch
the worker drops (retired, lost, given back) has it removed at once (``forget``). The folder of
all branches is one per process, named after its pid, and is removed when the process ends
(T3); a process killed with SIGKILL cannot clean up, so each new process first removes the
folders of pids that are no longer running (``remove_stale``).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from shared.git.auth import keeps_files
from shared.git.credentials import KnownHostsMissing, SecretMissing, known_hosts_of, resolve
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.model.ids import BranchKey
from shared.store.config import ConfigStore

log = logging.getLogger(__name__)

PREFIX = "gitops-reverser-ssh-"
#: ``gitops-reverser-ssh-<pid>-<mkdtemp suffix>``: the pid of the process that owns it.
_OWNED_BY = re.compile(re.escape(PREFIX) + r"(?P<pid>[0-9]+)-")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: running
    return True


def remove_stale(parent: Path | None = None) -> list[Path]:
    """Remove the SSH folders (ours: same user) of processes that are no longer running, as
    one killed with SIGKILL leaves; the folders removed. A folder whose pid runs again (a pid
    reused) is kept until a later start finds it dead: never one of a live process. Pids are
    this machine's (or container's): the folder lives in its own temporary directory."""
    removed: list[Path] = []
    root = parent or Path(tempfile.gettempdir())
    for folder in root.glob(PREFIX + "*"):
        found = _OWNED_BY.match(folder.name)
        if found is None or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            continue
        pid = int(found["pid"])
        if pid != os.getpid() and not _running(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


class SecretCredentials:
    """A CredentialSource that reads the GitProvider's ``spec.secretRef`` Secret."""

    def __init__(
        self, reader: Callable[[], CrdReader], configs: ConfigStore, ssh_dir: Path | None = None
    ) -> None:
        self._reader = reader  # built on first use: branches without a Secret need no cluster
        self._configs = configs
        self._owned = ssh_dir is None  # our own temporary folder: removed by ``close``
        if ssh_dir is None:
            for folder in remove_stale():
                log.info("removed the SSH folder %s of a process that is gone", folder)
        self._ssh_dir = ssh_dir or Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))

    def __call__(self, bk: BranchKey) -> dict[str, str]:
        folder = self._ssh_dir / bk
        config = self._configs.branch(bk)
        if config is None or not config.secret_name:
            self.forget(bk)
            return {}
        try:
            reader = self._reader()
            hosts = known_hosts_of(
                reader.object_data, config.provider_namespace, config.known_hosts
            )
            env = resolve(
                reader.secret_data, config.provider_namespace, config.secret_name, folder, hosts
            )
        except (KubeError, SecretMissing, KnownHostsMissing) as err:
            # the branch is still worked: the push fails and is retried once the Secret is back
            if isinstance(err, SecretMissing):
                self.forget(bk)  # the Secret is gone: so is any key we wrote from it
            log.warning(
                "cannot read the credentials of branch %s: %s", bk, err, extra={"branch": bk}
            )
            return {}
        if not keeps_files(env):
            self.forget(bk)  # no identity or CA (any more): no file on disk
        return env

    def forget(self, bk: BranchKey) -> None:
        """Remove the SSH files of a branch (its Secret is gone, or the worker dropped it)."""
        shutil.rmtree(self._ssh_dir / bk, ignore_errors=True)

    def close(self) -> None:
        """Remove every SSH file this process wrote (at exit)."""
        if self._owned:
            shutil.rmtree(self._ssh_dir, ignore_errors=True)
