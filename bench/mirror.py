"""Edits mirrored per second with ``commitWindow: 0s``, beside a plain git script.

Three sides make commits and pushes against the same sandbox Git host (smart HTTP) in the same
run, one commit and one push per edit, edits one after another:

- end to end: a ConfigMap edit through the sandbox Kubernetes API (official client), seen by the
  watcher process, published to Redis, committed and CAS-pushed by the branch-worker process,
  with the watcher, branch worker, dispatcher and receiver running (``bench.product``). Latency
  is from sending the API write to the moment the remote tip shows the edit (the bare
  repository's ref, polled tightly); one edit is sent only once the previous one is on the
  remote;
- the branch worker alone, in this process: an object event published straight into Redis as
  the watcher publishes it, read, rendered, committed, CAS-pushed and acknowledged. Latency is
  from publishing the event to its acknowledgement, which follows the push (M8);
- the plain side: ``git commit`` + ``git push`` of the same file, the floor for any design that
  makes one commit and one push per edit.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

import yaml

from bench.product import (
    SETUP_TIMEOUT_S,
    ConfigMapEditor,
    Repo,
    configure,
    provider,
    repository,
    running,
    target,
)
from bench.report import Section, percentile
from sandbox.githost.outside import OutsideClone, git
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from shared.store.connection import connect
from tests.configs import branch_config, target_config
from tests.e2e.system import System

EDITS = 60
#: Edits of the end-to-end side: each costs a watch event, a commit and a push (~0.1 s).
E2E_EDITS = 40
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
        branch_config(url, "main", "team", "gp", commit_window_s=0.0)
    )
    uid = GitTargetUid("bench-target")
    stores.configs.publish_target(target_config(uid, "team", "gt", url, "main", path="apps"))
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
    clone = OutsideClone(url, work / "clone", timeout=EDIT_TIMEOUT_S)
    latencies = []
    for i in range(EDITS):
        start = time.perf_counter()
        clone.write({"apps/team/configmaps/bench.yaml": f"n: '{i}'\n"})
        clone.git("add", "-A")  # not clone.commit: its rev-parse is not part of a plain push
        clone.git("commit", "-qm", f"edit {i}")
        clone.push()
        latencies.append(time.perf_counter() - start)
    return latencies


def _end_to_end(system: System) -> tuple[list[float], int]:
    """API edits one at a time, each timed until the remote tip moves; and the commits made."""
    repo = repository(system, "e2e")
    configure(system, [provider(repo.url, "0s", receiver=False), target(None)])
    configmap = ConfigMapEditor(system, "bench")
    first = repo.tip()
    configmap.create("created")
    tip = start_tip = repo.wait_for_new_tip(first, SETUP_TIMEOUT_S)  # watching and owning
    latencies = []
    for i in range(E2E_EDITS):
        start = time.perf_counter()
        configmap.edit(str(i))
        tip = repo.wait_for_new_tip(tip, EDIT_TIMEOUT_S)
        latencies.append(time.perf_counter() - start)
    _check_last_edit(repo, configmap.path(), tip)
    return latencies, int(git("rev-list", "--count", f"{start_tip}..{tip}", cwd=repo.bare))


def _check_last_edit(repo: Repo, path: str, tip: str) -> None:
    """The remote's file holds the last edit: what was timed is the mirror, whole."""
    mirrored = yaml.safe_load(git("show", f"{tip}:{path}", cwd=repo.bare))
    if mirrored["data"]["n"] != str(E2E_EDITS - 1):
        raise RuntimeError(f"bench: the remote holds {mirrored['data']}, not the last edit")


def _rows(section: Section, what: str, latencies: list[float], plain_rate: float) -> None:
    rate = len(latencies) / sum(latencies)
    section.add(f"{what}: edits mirrored", rate, "edits/s", f"{len(latencies)} edits")
    section.add(f"{what}: ratio to the plain git script", rate / plain_rate, "")
    section.add(f"{what}: edit to pushed, p50", percentile(latencies, 50) * 1000, "ms")
    section.add(f"{what}: edit to pushed, p99", percentile(latencies, 99) * 1000, "ms")


def bench() -> Section:
    """All three sides against the sandbox's Git host, with the product's processes running."""
    section = Section(
        "Mirroring with commitWindow 0s, beside a plain git script",
        "scripts/with-redis .venv/bin/python -m bench mirror",
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with running(root / "system") as system:
            e2e, commits = _end_to_end(system)
            host = system.sbx.githost
            host.create_repo("ours", files={"README.md": b"x\n"})
            host.create_repo("plain", files={"README.md": b"x\n"})
            ours = _ours(host.repo_url("ours"), root / "ours")
            plain = _plain(host.repo_url("plain"), root / "plain")
    plain_rate = EDITS / sum(plain)
    section.add("plain git script: commit + push", plain_rate, "edits/s", f"{EDITS} edits")
    section.add("plain git script: p50", percentile(plain, 50) * 1000, "ms")
    _rows(section, "end to end (API edit to remote tip)", e2e, plain_rate)
    section.add("end to end: commits made", commits, "commits", f"for {E2E_EDITS} edits")
    _rows(section, "branch worker alone (Redis event to ack)", ours, plain_rate)
    section.notes.append(
        "End to end: the watcher, branch worker, dispatcher and receiver processes run; "
        "an edit is a strategic merge patch of one ConfigMap through the official client, and "
        "it is pushed when the bare repository's ref shows a new commit holding it. The branch "
        "worker alone runs in the benchmark's process and is timed to the event's "
        "acknowledgement, which follows its push."
    )
    return section
