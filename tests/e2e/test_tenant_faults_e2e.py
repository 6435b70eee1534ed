"""One tenant's content or Git host never stops the branch worker for every tenant (T4, issue
23).

Each test starts the branch-worker process as a user starts it (``python -m
services.branch_worker``) on a private Redis, with a bad tenant and a good one, publishes their
settings and edits as the watcher would, and asserts that the process is still running, the
good tenant's edit reaches Git and the bad tenant's GitTarget shows why it is refused or
stalled. The probe (../shared/reports/probe-2026-12-06.md N1, N2, N4, N8, N12) and the
outside checks (FLUSHALL) saw the process exit, a branch pinned for hours or stalled whole, a
SIGTERM that did not stop it, and work folders never removed.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sandbox.githost.outside import OutsideClone, git
from services.branch_worker.stores import Stores
from shared.model.config import TargetConfig
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from tests.configs import branch_config, target_config
from tests.fixtures import process_env
from tests.helpers import wait_until
from tests.integration.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.e2e
__all__ = ["redis_server"]  # the fixture, imported for pytest

#: Bound of every wait for the worker process (the machine may be loaded).
WAIT_S = 45.0
#: How long a stopped worker may take to finish the unit in hand (conventions 10).
STOP_S = 30.0
PREFIX = "faults"
KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


def _event(uid: GitTargetUid, name: str, operation: str = "CREATE") -> ObjectEvent:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team"},
        "data": {"k": name},
    }
    return ObjectEvent(
        GitTargetRef(uid, "team", uid),
        operation,
        ObjectId("", "v1", "configmaps", "ConfigMap", "team", name),
        f"uid-{name}",
        "1",
        None if operation == "DELETE" else body,
        (),
        0.0,
    )


@dataclass
class Rig:
    """A private Redis, bare repositories, and branch-worker processes started by the test."""

    tmp: Path
    server: RedisServer
    stores: Stores = field(init=False)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    #: The branch and GitTargets published for each repository (again after a wipe).
    served: dict[str, tuple[str, list[TargetConfig]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        settings = Settings(redis_url=self.server.url, key_prefix=PREFIX)
        self.stores = Stores.build(self.server.client(), settings)

    @property
    def work_dir(self) -> Path:
        return self.tmp / "work"

    def repo(self, name: str, files: dict[str, str | bytes] | None = None) -> Path:
        """A bare repository, with a first commit of ``files`` pushed by someone else."""
        bare = self.tmp / f"{name}.git"
        git("init", "-q", "--bare", "-b", "main", str(bare))
        if files is not None:
            clone = OutsideClone(str(bare), self.tmp / "clones" / name)
            clone.write(files)
            clone.commit("seed")
            clone.push()
        return bare

    def serve(self, url: str, *paths: str) -> BranchKey:
        """Publish the branch of ``url`` with one GitTarget per path (uid ``gt-<path>``)."""
        targets = [
            target_config(GitTargetUid(f"gt-{p}"), "team", f"gt-{p}", url, "main", path=p)
            for p in paths
        ]
        self.served[url] = (url, targets)
        return self.stores.configs.publish_served(
            branch_config(url, "main", "team", f"gp-{Path(url).name}", commit_window_s=0.0),
            targets,
        )

    def republish(self) -> None:
        """What the watcher publishes again after Redis comes back empty (C8)."""
        for url, targets in self.served.values():
            self.stores.configs.publish_served(
                branch_config(url, "main", "team", f"gp-{Path(url).name}", commit_window_s=0.0),
                targets,
            )

    def edit(self, bk: BranchKey, path: str, name: str, operation: str = "CREATE") -> None:
        self.stores.events.publish(bk, _event(GitTargetUid(f"gt-{path}"), name, operation))

    def files(self, bare: Path) -> list[str]:
        if not git("for-each-ref", "refs/heads/main", cwd=bare).strip():
            return []
        return git("ls-tree", "-r", "--name-only", "main", cwd=bare).splitlines()

    def refusal(self, path: str) -> dict[str, str] | None:
        return self.stores.configs.refusal(GitTargetUid(f"gt-{path}"))

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """A branch-worker process, as a user starts it."""
        env = process_env(
            PREFIX, redis_url=self.server.url, lease_period="3s", work_dir=str(self.work_dir)
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.branch_worker", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(self.tmp / f"worker-{len(self.procs)}.log").open("wb"),
        )
        self.procs.append(proc)
        return proc

    def until(
        self, proc: subprocess.Popen[bytes], condition: Callable[[], bool], what: str
    ) -> None:
        """Wait for ``condition``, failing at once if the worker process exits meanwhile."""

        def holds() -> bool:
            assert proc.poll() is None, f"the branch worker exited ({proc.returncode}) {self.log()}"
            return condition()

        wait_until(holds, WAIT_S, what, poll=0.1)

    def log(self) -> str:
        logs = sorted(self.tmp.glob("worker-*.log"))
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in logs)


@pytest.fixture
def rig(tmp_path: Path, redis_server: RedisServer) -> Iterator[Rig]:
    running = Rig(tmp_path, redis_server)
    yield running
    for proc in running.procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=STOP_S)


def test_a_gittargetignore_too_large_to_compile_refuses_its_folder_only(rig: Rig) -> None:
    """N1: a 100,000-character line made pathspec raise ``re2.Error`` and the process exit, on
    every restart; now that folder is refused and the other tenant's edits go on."""
    bad = rig.repo("bad", {"apps/.gittargetignore": "a" * 100_000})
    good = rig.repo("good")
    bad_bk, good_bk = rig.serve(str(bad), "apps"), rig.serve(str(good), "good")
    proc = rig.start()
    rig.edit(bad_bk, "apps", "in-bad")
    rig.edit(good_bk, "good", "first")
    rig.until(proc, lambda: rig.refusal("apps") is not None, "the bad folder's refusal")
    refusal = rig.refusal("apps")
    assert refusal is not None and refusal["reason"] == "UnsupportedContent", refusal
    assert "apps/.gittargetignore cannot be read" in refusal["message"]
    rig.edit(good_bk, "good", "after")
    rig.until(proc, lambda: "good/team/configmaps/after.yaml" in rig.files(good), "good's edit")
    assert proc.poll() is None


class _Garbage(BaseHTTPRequestHandler):
    """A Git host answering every request with bytes that are not UTF-8 (N2)."""

    BODY = b"\x92\xff\xfe\x80" + random.Random(23).randbytes(64 * 1024)

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def do_POST(self) -> None:
        self.do_GET()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def garbage_host() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadingHTTPServer(("127.0.0.1", port), _Garbage)
    server.daemon_threads = True  # closing never waits on a request a client left half-read
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/sandbox/x.git"
    server.shutdown()
    server.server_close()


def test_a_git_host_answering_garbage_stalls_its_branch_only(rig: Rig, garbage_host: str) -> None:
    """N2: git's error held lone surrogates; written to Redis as the stall reason, redis-py
    raised ``UnicodeEncodeError`` and the process exited, on every restart."""
    good = rig.repo("good")
    bad_bk, good_bk = rig.serve(garbage_host, "apps"), rig.serve(str(good), "good")
    proc = rig.start()
    rig.edit(bad_bk, "apps", "in-bad")
    rig.edit(good_bk, "good", "first")
    rig.until(proc, lambda: bad_bk in rig.stores.health.stalls(), "the garbage branch's stall")
    stall = rig.stores.health.stalls()[bad_bk]
    assert stall.reason == "BranchStalled"
    assert "bad line length character" in stall.message, stall.message
    rig.until(proc, lambda: "good/team/configmaps/first.yaml" in rig.files(good), "good's edit")
    rig.edit(good_bk, "good", "after")
    rig.until(proc, lambda: "good/team/configmaps/after.yaml" in rig.files(good), "good's edit")


def _diamond(depth: int) -> dict[str, str | bytes]:
    """N4's folder: each level's kustomization lists both folders of the next."""
    files: dict[str, str | bytes] = {
        "apps/kustomization.yaml": KUSTOMIZATION + "resources: [l1a, l1b]\n"
    }
    for d in range(1, depth + 1):
        below = f"../l{d + 1}a, ../l{d + 1}b" if d < depth else ""
        for side in "ab":
            files[f"apps/l{d}{side}/kustomization.yaml"] = KUSTOMIZATION + f"resources: [{below}]\n"
    return files


def test_a_kustomize_diamond_is_written_at_once_and_sigterm_stops_the_worker(rig: Rig) -> None:
    """N4: the diamond rendered in exponential time (depth 30: years), pinning a thread with
    the GitTarget Ready, and SIGTERM waited for it; now each folder renders once, the edit
    lands, and SIGTERM stops the worker (exit 0) within the stop bound."""
    bad = rig.repo("diamond", _diamond(30))
    good = rig.repo("good")
    bad_bk, good_bk = rig.serve(str(bad), "apps"), rig.serve(str(good), "good")
    proc = rig.start()
    rig.edit(bad_bk, "apps", "in-diamond")
    rig.edit(good_bk, "good", "first")
    rig.until(proc, lambda: "good/team/configmaps/first.yaml" in rig.files(good), "good's edit")
    rig.until(
        proc, lambda: "apps/team/configmaps/in-diamond.yaml" in rig.files(bad), "the diamond's edit"
    )
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=STOP_S) == 0
    except subprocess.TimeoutExpired:
        pytest.fail(f"SIGTERM did not stop the branch worker within {STOP_S}s")


def test_a_kustomization_through_a_link_out_of_the_tree_refuses_that_folder_only(
    rig: Rig,
) -> None:
    """N8: ``PathEscapes`` from a resource read through a link to /etc was not caught, and
    every GitTarget of the branch stalled; now that folder is refused (UnsupportedContent) and
    the other GitTarget on the same branch goes on."""
    shared = rig.repo("shared", {"good/README.md": "the good tenant's folder\n"})
    clone = OutsideClone(str(shared), rig.tmp / "clones" / "link")
    (clone.work / "outside").symlink_to("/etc")
    clone.write({"bad/kustomization.yaml": KUSTOMIZATION + "resources:\n- ../outside/\n"})
    clone.commit("a kustomization through a link")
    clone.push()
    bk = rig.serve(str(shared), "bad", "good")
    proc = rig.start()
    rig.edit(bk, "bad", "in-bad")
    rig.edit(bk, "good", "in-good")
    rig.until(proc, lambda: "good/team/configmaps/in-good.yaml" in rig.files(shared), "good")
    refusal = rig.refusal("bad")
    assert refusal is not None and refusal["reason"] == "UnsupportedContent", refusal
    assert "outside/kustomization.yaml cannot be read" in refusal["message"], refusal
    assert bk not in rig.stores.health.stalls()


def test_flushall_is_ridden_out_and_later_edits_and_deletes_reach_git(rig: Rig) -> None:
    """The outside checks: ``FLUSHALL`` while the worker ran ended it with ``ResponseError:
    UNBLOCKED the stream key no longer exists`` (or ``NOGROUP``); now it goes on, and once the
    watcher has published again (C8), new edits and deletes reach Git."""
    repo = rig.repo("r")
    bk = rig.serve(str(repo), "apps")
    proc = rig.start()
    rig.edit(bk, "apps", "before")
    rig.until(proc, lambda: "apps/team/configmaps/before.yaml" in rig.files(repo), "the edit")
    rig.server.client().flushall()
    rig.republish()
    rig.edit(bk, "apps", "after")
    rig.edit(bk, "apps", "before", "DELETE")
    rig.until(
        proc,
        lambda: (
            {"apps/team/configmaps/after.yaml"} == {f for f in rig.files(repo) if "/team/" in f}
        ),
        "the edit and the delete after the wipe",
    )


def test_a_start_removes_the_work_folders_of_earlier_workers(rig: Rig) -> None:
    """N12: each start cloned into a new ``<hostname>-<pid>`` folder and none was removed."""
    repo = rig.repo("r")
    bk = rig.serve(str(repo), "apps")
    first = rig.start()
    rig.edit(bk, "apps", "one")
    rig.until(first, lambda: "apps/team/configmaps/one.yaml" in rig.files(repo), "the edit")
    old = rig.work_dir / f"{socket.gethostname()}-{first.pid}"
    assert old.is_dir()
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=STOP_S) == 0
    second = rig.start()
    rig.edit(bk, "apps", "two")
    rig.until(second, lambda: "apps/team/configmaps/two.yaml" in rig.files(repo), "the edit")
    assert (rig.work_dir / f"{socket.gethostname()}-{second.pid}").is_dir()
    assert not old.exists(), "the first worker's folder is gone"
