"""Edits mirrored per second with ``commitWindow: 0s``, beside a plain git script.

Both sides make the same commits and pushes against the same sandbox Git host (smart HTTP) in
the same run: one commit and one push per edit, edits one after another. Our side is the whole
branch-worker path: an object event published to Redis, read by the worker, rendered, committed,
CAS-pushed and acknowledged. The plain side is ``git commit`` + ``git push`` of the same file.
Latency is from publishing the event to its acknowledgement, which follows the push (M8).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.report import Section, percentile
from sandbox.githost import GitHost
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.config import BranchConfig, TargetConfig
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from shared.store.connection import connect

EDITS = 60
#: Upper bound on one edit's round trip, so the benchmark always ends.
EDIT_TIMEOUT_S = 30.0


def _event(uid: GitTargetUid, i: int) -> ObjectEvent:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "bench", "namespace": "team"},
        "data": {"n": str(i)},
    }
    oid = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "bench")
    return ObjectEvent(
        GitTargetRef(uid, "team", "gt"), "UPDATE", oid, "u", str(i), body, (), time.time()
    )


def _ours(url: str, work: Path) -> list[float]:
    settings = Settings.from_env(
        {
            "GITOPS_REVERSER_REDIS_URL": Settings.from_env().redis_url,
            "GITOPS_REVERSER_KEY_PREFIX": f"bench:{uuid.uuid4().hex[:8]}",
            "GITOPS_REVERSER_WORK_DIR": str(work),
        }
    )
    stores = Stores.build(connect(settings.redis_url, "bench"), settings)
    bk: BranchKey = stores.configs.publish_branch(
        BranchConfig(url, "main", "team", "gp", commit_window_s=0.0)
    )
    uid = GitTargetUid("bench-target")
    stores.configs.publish_target(TargetConfig(uid, "team", "gt", url, "main", "apps"))
    worker = BranchWorker(settings, stores, "bench", time.time)
    worker.wake()  # take the branch and sync the work tree before timing
    latencies = []
    for i in range(EDITS):
        start = time.perf_counter()
        stores.events.publish(bk, _event(uid, i))
        while stores.events.pending_count(bk):
            worker.wake()
            if time.perf_counter() - start > EDIT_TIMEOUT_S:
                raise RuntimeError("an edit took too long to mirror")
        latencies.append(time.perf_counter() - start)
    worker.shutdown()
    return latencies


def _plain(url: str, work: Path) -> list[float]:
    env = {
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
    }

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args],
            cwd=work / "clone",
            env=env,
            check=True,
            capture_output=True,
            timeout=EDIT_TIMEOUT_S,
        )

    subprocess.run(
        ["git", "clone", "-q", url, str(work / "clone")],
        env=env,
        check=True,
        capture_output=True,
        timeout=EDIT_TIMEOUT_S,
    )
    target = work / "clone" / "apps" / "team" / "configmaps" / "bench.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    latencies = []
    for i in range(EDITS):
        start = time.perf_counter()
        target.write_text(f"n: '{i}'\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"edit {i}")
        git("push", "-q", "origin", "HEAD:main")
        latencies.append(time.perf_counter() - start)
    return latencies


def bench() -> Section:
    """Run both sides in one process against one git host."""
    section = Section(
        "Mirroring with commitWindow 0s, beside a plain git script",
        "make bench  (python -m bench mirror)",
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        host = GitHost(root / "host")
        host.start()
        try:
            host.create_repo("ours", files={"README.md": b"x\n"})
            host.create_repo("plain", files={"README.md": b"x\n"})
            ours = _ours(host.repo_url("ours"), root / "ours")
            plain = _plain(host.repo_url("plain"), root / "plain")
        finally:
            host.stop()
    ours_rate, plain_rate = EDITS / sum(ours), EDITS / sum(plain)
    section.add("gitops-reverser, edits mirrored", ours_rate, "edits/s", f"{EDITS} edits")
    section.add("plain git script, same commits and pushes", plain_rate, "edits/s")
    section.add("ratio (ours / plain)", ours_rate / plain_rate, "")
    section.add("edit to pushed, p50", percentile(ours, 50) * 1000, "ms")
    section.add("edit to pushed, p99", percentile(ours, 99) * 1000, "ms")
    section.notes.append(
        "The API side (watcher) is not in this path yet: the event is published "
        "into Redis as the watcher publishes it."
    )
    return section
