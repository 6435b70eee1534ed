"""T3 (the reliability probe's SSH finding): no SSH key outlives its branch here, nor the process.

A branch the worker drops (its lease lost, or retired once no GitTarget writes to it) has its
key removed at once, while the process lives. A real ``python -m services.branch_worker``
stopped with SIGTERM leaves no ``gitops-reverser-ssh-*`` folder; one killed with SIGKILL cannot
clean up, so the next process removes the folders of pids that no longer run. The remote is the
sandbox's fake ``ssh``; the Secret is read through the API server double.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from services.branch_worker.credentials import PREFIX, SecretCredentials, remove_stale
from services.branch_worker.orphans import GRACE_S as ORPHAN_GRACE_S
from services.branch_worker.worker import BranchWorker
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.keys import Keys
from tests.configs import branch_config, target_config
from tests.fixtures import process_env
from tests.helpers import wait_until
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import Site
from tests.integration.git.ssh_support import KEY, SshRemote, ssh_remote_and_cluster, store_secret

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SECRET = "deploy-key"
#: Bounds of the waits on a process we started; each ends as soon as its condition holds.
WAIT_S = 60.0


@dataclass
class Ssh:
    """An ``ssh://`` repository, its Secret in the API server double, and a kubeconfig."""

    remote: SshRemote
    kubeconfig: Path
    reader: CrdReader

    def publish(self, site: Site) -> BranchKey:
        """The branch and one GitTarget on it, as the watcher publishes them."""
        url = self.remote.url
        return site.stores.configs.publish_served(
            branch_config(url, "main", "default", "gp", secret_name=SECRET, commit_window_s=0.0),
            [target_config(GitTargetUid("gt-ssh"), "default", "gt", url, "main", path="apps")],
        )


@pytest.fixture
def ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ssh]:
    with ssh_remote_and_cluster(tmp_path / "ssh-host", monkeypatch) as (remote, kube):
        store_secret(client.CoreV1Api(kube.api_client()), "default", SECRET, remote.secret)
        kubeconfig = tmp_path / "kubeconfig"
        kube.write_kubeconfig(kubeconfig)
        yield Ssh(remote, kubeconfig, CrdReader(KubeClient(kube.api_client(), "local")))


def _worker(site: Site, ssh: Ssh, folder: Path, clock: Clock) -> BranchWorker:
    credentials = SecretCredentials(lambda: ssh.reader, site.stores.configs, folder)
    return BranchWorker(site.settings, site.stores, "w1", clock, credentials=credentials)


def _take(worker: BranchWorker, bk: BranchKey, key: Path) -> None:
    worker.wake()
    worker.settle()
    assert bk in worker.loops, "the worker took the branch"
    assert key.read_bytes() == KEY, "and wrote its key to fetch it"


def test_a_lost_branch_loses_its_key_while_the_worker_lives(
    site: Site, ssh: Ssh, tmp_path: Path
) -> None:
    bk, keys = ssh.publish(site), tmp_path / "keys"
    clock = Clock()
    worker = _worker(site, ssh, keys, clock)
    try:
        _take(worker, bk, keys / bk / "identity")
        site.client.delete(Keys(site.prefix).branch_lease(bk))  # expired while paused
        assert site.stores.leases.acquire(bk, "w2") is not None
        worker.heartbeat.beat()
        clock.now += 1.0
        worker.wake()
        worker.settle()
        assert bk not in worker.loops
        assert not (keys / bk).exists(), "the key went with the branch, not at exit"
    finally:
        worker.shutdown()


def test_a_retired_branch_loses_its_key(site: Site, ssh: Ssh, tmp_path: Path) -> None:
    bk, keys = ssh.publish(site), tmp_path / "keys"
    clock = Clock()
    worker = _worker(site, ssh, keys, clock)
    try:
        _take(worker, bk, keys / bk / "identity")
        config = site.stores.configs.target(GitTargetUid("gt-ssh"))
        assert config is not None
        site.stores.configs.forget_target(config)
        for step in (0.0, ORPHAN_GRACE_S / 2, ORPHAN_GRACE_S / 2):
            clock.now += step
            worker.wake()
            worker.settle()
        assert bk not in worker.loops, "retired"
        assert not (keys / bk).exists()
    finally:
        worker.shutdown()


def _environment(site: Site, ssh: Ssh, tmp: Path) -> dict[str, str]:
    env = process_env(
        site.prefix, kubeconfig=str(ssh.kubeconfig), work_dir=str(site.tmp / "process-work")
    )
    env["PYTHONPATH"] = str(ROOT)
    env["TMPDIR"] = str(tmp)  # where the process makes its SSH folder (tempfile)
    return env


def _start(env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "services.branch_worker", "--id", name]
    return subprocess.Popen(argv, env=env, cwd=ROOT)


def _keys_of(tmp: Path, pid: int) -> list[Path]:
    return sorted(tmp.glob(f"{PREFIX}{pid}-*/*/identity"))


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    process.send_signal(sig)
    return process.wait(WAIT_S)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def test_sigterm_leaves_no_ssh_folder(site: Site, ssh: Ssh, tmp: Path) -> None:
    ssh.publish(site)
    process = _start(_environment(site, ssh, tmp), "w-term")
    try:
        wait_until(lambda: bool(_keys_of(tmp, process.pid)), WAIT_S, "the key was written")
        assert _keys_of(tmp, process.pid)[0].read_bytes() == KEY
    finally:
        code = _stop(process, signal.SIGTERM)
    assert code == 0
    assert list(tmp.glob(f"{PREFIX}*")) == [], "no SSH folder outlives the process"


def test_the_folder_of_a_killed_process_is_removed_by_the_next_one(
    site: Site, ssh: Ssh, tmp: Path
) -> None:
    ssh.publish(site)
    env = _environment(site, ssh, tmp)
    killed = _start(env, "w-killed")
    try:
        wait_until(lambda: bool(_keys_of(tmp, killed.pid)), WAIT_S, "the key was written")
    finally:
        _stop(killed, signal.SIGKILL)
    left = list(tmp.glob(f"{PREFIX}{killed.pid}-*"))
    assert len(left) == 1, "SIGKILL leaves the folder (nothing runs at exit)"

    # The killed worker's lease runs out before the next one can take the branch; the folder
    # is removed when the next process starts, whatever it takes.
    following = _start(env, "w-next")
    try:
        wait_until(lambda: not left[0].exists(), WAIT_S, "the stale folder was removed")
        wait_until(lambda: bool(list(tmp.glob(f"{PREFIX}{following.pid}-*"))), WAIT_S, "own")
    finally:
        assert _stop(following, signal.SIGTERM) == 0
    assert list(tmp.glob(f"{PREFIX}*")) == []


def test_remove_stale_keeps_live_processes_and_foreign_names(tmp_path: Path) -> None:
    """Only ``gitops-reverser-ssh-<pid>-*`` folders of pids that no longer run are removed."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(WAIT_S)
    dead = tmp_path / f"{PREFIX}{gone.pid}-abc"
    live = tmp_path / f"{PREFIX}{os.getppid()}-def"
    mine = tmp_path / f"{PREFIX}{os.getpid()}-ghi"
    old_style = tmp_path / f"{PREFIX}xyz"
    for folder in (dead, live, mine, old_style):
        (folder / "bk").mkdir(parents=True)
    assert remove_stale(tmp_path) == [dead]
    assert not dead.exists()
    assert live.exists() and mine.exists() and old_style.exists()
