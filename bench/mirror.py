"""Edits mirrored per second with ``commitWindow: 0s``, beside a plain git script.

Three sides make commits and pushes against the same sandbox Git host (smart HTTP) in the same
run, one commit and one push per edit, each edit once the previous one is done; the sides take
turns, one edit each per round, so that load from elsewhere on the machine weighs on all three:

- end to end: a ConfigMap edit through the sandbox Kubernetes API (official client), seen by the
  watcher process, published to Redis, committed and CAS-pushed by the branch-worker process,
  with the watcher, branch worker, dispatcher and receiver running (``bench.product``). Latency
  is from sending the API write to the moment the remote tip shows the edit (the bare
  repository's ref, polled tightly); one edit is sent only once the previous one is on the
  remote;
- the branch worker alone, in this process: an object event published straight into Redis as
  the watcher publishes it, read, rendered, committed, CAS-pushed and acknowledged. Latency is
  from publishing the event to its acknowledgement, which follows the push (M8);
- the branch worker alone again, with the benchmarks' plain writer (``bench.plain``, handed to
  the worker as its work trees: no in-place editing, no digests, no ``.gittargetignore``
  check, no bootstrap files), so issue 14's goal (the writer as built at most 20% slower than
  without what it added) is a ratio taken in the same run;
- the plain side: ``git commit`` + ``git push`` of the same file, the floor for any design that
  makes one commit and one push per edit.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

import yaml

from bench.plain import PlainTree
from bench.product import (
    SETUP_TIMEOUT_S,
    ConfigMapEditor,
    configure,
    provider,
    repository,
    running,
    target,
)
from bench.report import Section, percentile
from sandbox.githost.outside import OutsideClone, git
from services.branch_worker.worker import BranchWorker, Stores
from services.branch_worker.worktree import TreeFactory, WorkTree
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from shared.store.connection import connect
from tests.configs import branch_config, target_config
from tests.e2e.system import System

#: Edits of each side. The sides take turns, one edit each per round (rotating who goes
#: first), so a busy machine weighs on all three alike and the ratios stay fair.
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


class _Ours:
    """The branch worker alone, in this process: publish an event, wake until it is acked."""

    def __init__(self, url: str, work: Path, trees: TreeFactory = WorkTree) -> None:
        settings = Settings.from_env(
            {
                "GITOPS_REVERSER_REDIS_URL": Settings.from_env().redis_url,
                "GITOPS_REVERSER_KEY_PREFIX": f"bench:{uuid.uuid4().hex[:8]}",
                "GITOPS_REVERSER_WORK_DIR": str(work),
            }
        )
        self._stores = Stores.build(connect(settings.redis_url, "bench"), settings)
        self._bk: BranchKey = self._stores.configs.publish_branch(
            branch_config(url, "main", "team", "gp", commit_window_s=0.0)
        )
        self._uid = GitTargetUid("bench-target")
        self._stores.configs.publish_target(
            target_config(self._uid, "team", "gt", url, "main", path="apps")
        )
        self.worker = BranchWorker(settings, self._stores, "bench", time.time, trees=trees)
        self.worker.wake()  # take the branch and sync the work tree before timing

    def edit(self, i: int) -> float:
        start = time.perf_counter()
        self._stores.events.publish(self._bk, _event(self._uid, i))
        while self._stores.events.pending_count(self._bk):
            self.worker.wake()
            if time.perf_counter() - start > EDIT_TIMEOUT_S:
                raise RuntimeError("an edit took too long to mirror")
        return time.perf_counter() - start


class _Plain:
    """``git commit`` + ``git push`` of the same file in a clone."""

    def __init__(self, url: str, work: Path) -> None:
        self._clone = OutsideClone(url, work / "clone", timeout=EDIT_TIMEOUT_S)

    def edit(self, i: int) -> float:
        start = time.perf_counter()
        self._clone.write({"apps/team/configmaps/bench.yaml": f"n: '{i}'\n"})
        self._clone.git("add", "-A")  # not clone.commit: its rev-parse is not part of a push
        self._clone.git("commit", "-qm", f"edit {i}")
        self._clone.push()
        return time.perf_counter() - start


class _EndToEnd:
    """API edits through the official client, each timed until the remote tip moves."""

    def __init__(self, system: System) -> None:
        self.repo = repository(system, "e2e")
        configure(system, [provider(self.repo.url, "0s", receiver=False), target(None)])
        self.configmap = ConfigMapEditor(system, "bench")
        first = self.repo.tip()
        self.configmap.create("created")
        self.tip = self.start_tip = self.repo.wait_for_new_tip(first, SETUP_TIMEOUT_S)
        self.last = ""

    def edit(self, i: int) -> float:
        start = time.perf_counter()
        self.configmap.edit(str(i))
        self.tip = self.repo.wait_for_new_tip(self.tip, EDIT_TIMEOUT_S)
        self.last = str(i)
        return time.perf_counter() - start

    def commits(self) -> int:
        """Commits made since the set-up; each is checked to hold the last edit at the end."""
        mirrored = yaml.safe_load(
            git("show", f"{self.tip}:{self.configmap.path()}", cwd=self.repo.bare)
        )
        if mirrored["data"]["n"] != self.last:
            raise RuntimeError(f"bench: the remote holds {mirrored['data']}, not the last edit")
        return int(git("rev-list", "--count", f"{self.start_tip}..{self.tip}", cwd=self.repo.bare))


def _take_turns(sides: list[_Ours | _Plain | _EndToEnd]) -> list[list[float]]:
    """Latencies of each side, one edit of each per round, the first to go rotating."""
    latencies: list[list[float]] = [[] for _ in sides]
    for i in range(EDITS):
        for k in range(len(sides)):
            which = (i + k) % len(sides)
            latencies[which].append(sides[which].edit(i))
    return latencies


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
            e2e_side = _EndToEnd(system)
            host = system.sbx.githost
            host.create_repo("ours", files={"README.md": b"x\n"})
            host.create_repo("plain", files={"README.md": b"x\n"})
            host.create_repo("plain-writer", files={"README.md": b"x\n"})
            ours_side = _Ours(host.repo_url("ours"), root / "ours")
            url = host.repo_url("plain-writer")
            writer_side = _Ours(url, root / "plain-writer", trees=PlainTree)
            plain_side = _Plain(host.repo_url("plain"), root / "plain")
            try:
                sides: list[_Ours | _Plain | _EndToEnd] = [
                    e2e_side,
                    ours_side,
                    writer_side,
                    plain_side,
                ]
                e2e, ours, plain_writer, plain = _take_turns(sides)
            finally:
                ours_side.worker.shutdown()
                writer_side.worker.shutdown()
            commits = e2e_side.commits()
    plain_rate = EDITS / sum(plain)
    section.add("plain git script: commit + push", plain_rate, "edits/s", f"{EDITS} edits")
    section.add("plain git script: p50", percentile(plain, 50) * 1000, "ms")
    _rows(section, "end to end (API edit to remote tip)", e2e, plain_rate)
    section.add("end to end: commits made", commits, "commits", f"for {EDITS} edits")
    _rows(section, "branch worker alone (Redis event to ack)", ours, plain_rate)
    _rows(section, "branch worker alone, plain writer (bench.plain)", plain_writer, plain_rate)
    section.add(
        "branch worker alone: as built / plain writer, speed",
        sum(plain_writer) / sum(ours),
        "",
        "issue 14 goal: at least 0.8",
    )
    section.notes.append(
        "End to end: the watcher, branch worker, dispatcher and receiver processes run; "
        "an edit is a strategic merge patch of one ConfigMap through the official client, and "
        "it is pushed when the bare repository's ref shows a new commit holding it. The branch "
        "worker alone runs in the benchmark's process and is timed to the event's "
        "acknowledgement, which follows its push. The plain writer is the same branch worker "
        "with the benchmarks' plain writer, bench.plain, as its work trees (the writer as "
        "before issue 14: every write rendered whole, no digests, no .gittargetignore check, "
        "no bootstrap files); the edit is of a file the product wrote, the common case. The "
        "four sides take turns, one edit each per round, so load from elsewhere on the "
        "machine falls on all of them alike."
    )
    return section
