"""API edit to pushed with many GitTargets over many branches and four branch workers.

For each size (GitTargets over repositories, one branch ``main`` each) the benchmark starts the
sandbox, the watcher and four branch-worker processes (``bench.fleet``), configures every
GitTarget (a namespace each, with its GitProvider, ``commitWindow: 0s``, and a WatchRule on
ConfigMaps), and then:

- edits: one ConfigMap is created in each of up to ``SAMPLED`` GitTargets spread over the
  branches (untimed: this waits for the watcher and the workers to pick everything up), then
  ``EDITS`` strategic merge patches, one at a time, round robin over those GitTargets, each
  timed from the API write until its repository's tip moves; each edit takes turns with a
  plain ``git commit`` + ``git push`` of one file to another repository on the same Git host
  (``bench.mirror._Plain``), the floor of any design that pushes once per edit: a profile of
  the 1-target case (py-spy on the owner) shows most of an edit's time in the pass's git
  processes (the push about three quarters, the commit's two processes most of the rest), so
  the edit latency follows the machine's load as the floor does, and their ratio is what
  stays put between runs;
- idle cost: nothing is edited for ``IDLE_S`` seconds, over which Redis's
  ``total_commands_processed`` (the benchmark's private Redis: only the product talks to it,
  plus this benchmark's two INFO calls) and the Git host's ``git-upload-pack`` advertisements
  (each ``ls-remote`` or fetch starts with one) are counted; twice: first with only the edited
  repositories' receivers having delivered (the others tick, Q7), then after a signed ping to
  every repository's receiver (none makes a Git request while it is trusted, P14).

Every GitProvider has a GitHub receiver (the receiver process runs), and each repository's hook
posts to its first GitTarget's. Time, on a busy 2-core machine: about 2 minutes for the
default sizes; 5,000 GitTargets over 1,000 branches take most of their time in set-up (25,000
objects created through the API double, then the watcher's first passes and the first clones),
bounded by ``SETUP_TIMEOUT_S`` per edited target.

The steady tick and the watcher's reconcile period are the product's defaults (60 s, 10 s),
so the idle cost is what a default installation pays. Sizes: ``SIZES``, or
``BENCH_MANY_TARGETS="1:1,50:10,1000:200"`` (targets:repositories, the first one the baseline);
``BENCH_IDLE_S`` sets the idle window. ``BENCH_MANY_IDLE="1000:1000"`` adds sizes measured
for their idle cost alone (issue 27 item 9: Git requests and Redis commands per idle branch
at 1,000 branches): no edits; the windows start ``OWNED_SETTLE_S`` after every branch is owned
and started (at most ``SETUP_TIMEOUT_S``; 1,000 GitTargets over 1,000 branches took 108-156 s
to be owned and about 5 minutes in all on the 2-core machine). After the two windows,
``BENCH_MONITOR_S`` (default 20 s; 0: none) of Redis ``MONITOR`` attribute the idle commands
to processes and commands (``bench.monitor``; a third window, not counted in the two above).
``BENCH_PYSPY_DIR=DIR`` records the four workers, the watcher, the receiver and this process
(the API double and the Git host run in it) with py-spy over the timed edits, one folder per
size (``bench.profile``). Run alone:
``scripts/with-redis .venv/bin/python -m bench many_targets``.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.fleet import (
    NAMESPACE,
    Fleet,
    UploadPackCounter,
    configmap_editor,
    edit_and_wait,
    fleet,
    ping,
)
from bench.fleet import spread as spread_over
from bench.mirror import _Plain
from bench.monitor import Attribution, attribute
from bench.product import wait_for
from bench.profile import directory, profiled
from bench.report import Section, load_average, percentile
from shared.settings import Settings
from shared.store.connection import connect

#: (GitTargets, repositories) per run; the first is the baseline the others are compared with.
SIZES = ((1, 1), (50, 10))
WORKERS = 4
#: GitTargets edited (spread over the branches), and timed edits in all.
SAMPLED = 10
EDITS = 30
IDLE_S = 60.0
#: Bound on picking up the configuration (a reconcile pass, leases, first clones and commits):
#: at 1,000 branches every owner clones its 250 branches first, on a busy machine for minutes.
SETUP_TIMEOUT_S = 900.0
EDIT_TIMEOUT_S = 60.0
#: Settle time after the last edit before the idle window starts (windows closed, acks done).
SETTLE_S = 5.0
#: Settle time of an idle-only size after every branch is owned and started: their first
#: passes done, the workers' shares and orphan checks in their steady pace.
OWNED_SETTLE_S = 30.0
#: The attributed window (MONITOR), seconds, and how many (process, command) pairs it lists.
MONITOR_S = 20.0
TOP = 12


@dataclass(frozen=True, slots=True)
class Idle:
    """One idle window: Redis commands and Git requests (upload-pack advertisements)."""

    redis_per_s: float
    upload_packs_per_min: float
    seconds: float


@dataclass(frozen=True, slots=True)
class Result:
    targets: int
    repositories: int
    latencies: list[float]
    plain: list[float]
    setup_s: float
    #: Before the pings: only the edited repositories' receivers delivered (our pushes).
    ticking: Idle
    #: After a ping to every repository's receiver: all within the trust age (P14).
    trusted: Idle
    load: tuple[str, str]
    #: What MONITOR saw over a third idle window (None when ``BENCH_MONITOR_S`` is 0).
    attributed: Attribution | None = None
    #: The watcher process's threads and the API double's open watch streams once set up
    #: (issue 29: they grow with resource types, not with GitTargets or namespaces).
    watcher_threads: int = 0
    open_watches: int = 0


def _threads(pid: int) -> int:
    """Threads of process ``pid`` and its descendants (a Procfile entry runs under a shell)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        counts = [line.split()[1] for line in status.splitlines() if line.startswith("Threads:")]
        total += int(counts[0]) if counts else 0
        todo.extend(int(child) for child in children)
    return total


def _pairs(text: str) -> list[tuple[int, int]]:
    pairs = [part.split(":") for part in text.split(",") if part.strip()]
    return [(int(t), int(r)) for t, r in pairs]


def _sizes() -> list[tuple[int, int]]:
    text = os.environ.get("BENCH_MANY_TARGETS", "")
    return _pairs(text) if text else list(SIZES)


def _all_started(f: Fleet, repositories: int) -> bool:
    """Every branch leased and started by its owner (its state names the tip it took)."""
    if len(f.holders()) < repositories:
        return False
    redis = connect(f.env["GITOPS_REVERSER_REDIS_URL"], client_name="bench")
    try:
        pipe = redis.pipeline(transaction=False)
        for bk in f.branch_keys():
            pipe.hget(f.keys.branch_state(bk), "observed_tip")
        return all(pipe.execute())
    finally:
        redis.close()


def _commands(url: str) -> int:
    redis = connect(url, client_name="bench")
    try:
        return int(redis.info("stats")["total_commands_processed"])
    finally:
        redis.close()


def _idle(url: str, counter: UploadPackCounter, idle_s: float) -> Idle:
    """Count what the product sends while nothing is asked of it for ``idle_s``."""
    commands, packs, began = _commands(url), counter.count, time.perf_counter()
    time.sleep(idle_s)  # the idle window itself: what runs when nothing is asked for
    elapsed = time.perf_counter() - began
    redis_per_s = (_commands(url) - commands - 1) / elapsed
    return Idle(redis_per_s, (counter.count - packs) * 60.0 / elapsed, elapsed)


def _run(root: Path, targets: int, repositories: int, idle_s: float, edits: bool = True) -> Result:
    counter = UploadPackCounter()
    load_before = load_average()
    # each worker may own its fair share: the default cap (100 a worker) would leave 600 of
    # 1,000 branches to four workers unowned, so the cap is raised to the share here
    share = max(Settings().max_branches, -(-repositories // WORKERS))
    settings = {"steady_tick": "60s", "reconcile_period": "10s", "max_branches": str(share)}
    with counter.installed(), fleet(root, **settings) as f:
        f.configure(targets, repositories, receiver=True)
        watcher = f.start_process("watcher")
        f.others.append(watcher)
        f.others.append(f.start_process("receiver"))
        f.start_workers(WORKERS)
        latencies: list[float] = []
        plain: list[float] = []
        started = time.perf_counter()
        if edits:
            setup_s = _edits(f, root, targets, latencies=latencies, plain=plain)
            time.sleep(SETTLE_S)  # the last push's follow-up work ends before counting idle
        else:
            wait_for("every branch owned", lambda: _all_started(f, repositories), SETUP_TIMEOUT_S)
            setup_s = time.perf_counter() - started
            time.sleep(OWNED_SETTLE_S)  # first passes done: the idle pace from here on
        watcher_threads = _threads(watcher.pid)
        open_watches = sum(f.sbx.kube.open_watches().values())
        url = f.env["GITOPS_REVERSER_REDIS_URL"]
        ticking = _idle(url, counter, idle_s)
        for r in range(repositories):  # every receiver delivers (GitHub pings a new hook)
            if ping(f.hook_url(r)) != 200:
                raise RuntimeError(f"bench: the ping of repository {r} was refused")
        time.sleep(SETTLE_S)
        trusted = _idle(url, counter, idle_s)
        monitor_s = float(os.environ.get("BENCH_MONITOR_S", MONITOR_S))
        attributed = attribute(url, monitor_s) if monitor_s > 0 else None
    return Result(
        targets,
        repositories,
        latencies,
        plain,
        setup_s,
        ticking,
        trusted,
        (load_before, load_average()),
        attributed,
        watcher_threads,
        open_watches,
    )


def _edits(
    f: Fleet, root: Path, targets: int, *, latencies: list[float], plain: list[float]
) -> float:
    """The timed edits, in turns with the floor; returns the set-up time (first writes)."""
    began = time.perf_counter()
    sampled = list(spread_over(min(SAMPLED, targets), targets))
    writers = {i: configmap_editor(f.api, NAMESPACE.format(i)) for i in sampled}
    for i in sampled:  # first writes: everything picked up, every sampled branch cloned
        edit_and_wait(f.bare(i), writers[i], "created", SETUP_TIMEOUT_S)
    setup_s = time.perf_counter() - began
    f.sbx.githost.create_repo("plain", files={"README.md": b"x\n"})
    plain_side = _Plain(f.sbx.githost.repo_url("plain"), root / "plain")
    out = directory()
    pids = {name: p.pid for name, p in f.workers.items()}
    pids |= {"watcher": f.others[0].pid, "receiver": f.others[1].pid, "bench": os.getpid()}
    with profiled(pids, out / f"{targets}" if out else None):
        for n in range(EDITS):  # turns: the floor and the product under the same load
            i = sampled[n % len(sampled)]
            latencies.append(edit_and_wait(f.bare(i), writers[i], str(n), EDIT_TIMEOUT_S))
            plain.append(plain_side.edit(n))
    return setup_s


def bench() -> Section:
    """Each size in turn, the first as the baseline."""
    section = Section(
        "Many GitTargets: API edit to pushed, and the idle cost",
        "scripts/with-redis .venv/bin/python -m bench many_targets",
    )
    idle_s = float(os.environ.get("BENCH_IDLE_S", IDLE_S))
    results: list[Result] = []
    idle_only = _pairs(os.environ.get("BENCH_MANY_IDLE", ""))
    runs = [(t, r, True) for t, r in _sizes()] + [(t, r, False) for t, r in idle_only]
    for targets, repositories, edits in runs:
        print(f"bench: many_targets {targets} GitTargets / {repositories} branches", flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            results.append(_run(Path(scratch), targets, repositories, idle_s, edits))
    base = percentile(results[0].latencies, 50)
    for r in results:
        size = f"{r.targets} GitTargets / {r.repositories} branches"
        if not r.latencies:
            _idle_rows(section, r, f"{size} (idle only)")
            continue
        p50 = percentile(r.latencies, 50)
        section.add(f"{size}: edit to pushed, p50", p50 * 1000, "ms", f"{len(r.latencies)} edits")
        section.add(f"{size}: edit to pushed, p99", percentile(r.latencies, 99) * 1000, "ms")
        plain_p50 = percentile(r.plain, 50)
        section.add(
            f"{size}: plain git commit + push (floor), p50",
            plain_p50 * 1000,
            "ms",
            "same host, taking turns with the edits",
        )
        section.add(f"{size}: edit to pushed p50 / floor p50", p50 / plain_p50, "")
        if r is not results[0]:
            section.add(f"{size}: p50 / baseline p50", p50 / base, "", "goal: at most 2")
        _idle_rows(section, r, size)
    _charts(section, [r for r in results if r.latencies], results)
    section.notes.append(NOTE)
    return section


def _idle_rows(section: Section, r: Result, size: str) -> None:
    """The idle windows' rows of one size, and what MONITOR attributed."""
    load = f"load average {r.load[0]} before, {r.load[1]} after"
    for label, idle in (
        ("idle, steady tick", r.ticking),
        ("idle, receivers delivered (P14)", r.trusted),
    ):
        section.add(
            f"{size}: {label}: Redis commands",
            idle.redis_per_s,
            "commands/s",
            f"over {idle.seconds:.0f} s; {load}",
        )
        section.add(
            f"{size}: {label}: Redis commands per branch",
            idle.redis_per_s / r.repositories,
            "commands/s",
            "goal: at most 0.5 (issue 29)",
        )
        section.add(
            f"{size}: {label}: Redis commands per branch per minute",
            idle.redis_per_s * 60 / r.repositories,
            "per minute",
        )
        section.add(
            f"{size}: {label}: Git requests per branch per minute",
            idle.upload_packs_per_min / r.repositories,
            "per minute",
            "upload-pack advertisements (ls-remote, fetch)",
        )
    what = "first write of each edited target" if r.latencies else "every branch owned"
    section.add(f"{size}: set-up ({what})", r.setup_s, "s")
    section.add(
        f"{size}: watcher threads before the idle windows",
        r.watcher_threads,
        "threads",
        "issue 29: one shared watch per resource type, not a thread per namespace",
    )
    section.add(
        f"{size}: open watch streams on the API double before the idle windows",
        r.open_watches,
        "streams",
        "every process's, the watcher's one per type among them",
    )
    if r.attributed is None:
        return
    seconds = f"MONITOR, {r.attributed.seconds:.0f} s after the two windows"
    for process, count in r.attributed.by_process.most_common():
        rate = count / r.attributed.seconds
        section.add(f"{size}: idle, by process: {process}", rate, "commands/s", seconds)
    for process, command, rate in r.attributed.top(TOP):
        section.add(f"{size}: idle, top: {process} {command}", rate, "commands/s", seconds)


def _charts(section: Section, timed: list[Result], results: list[Result]) -> None:
    section.chart(
        "many_targets_latency",
        "API edit to pushed vs GitTargets (4 branch workers)",
        ("GitTargets", "ms"),
        {
            "p50": [(r.targets, percentile(r.latencies, 50) * 1000) for r in timed],
            "p99": [(r.targets, percentile(r.latencies, 99) * 1000) for r in timed],
        },
    )
    section.chart(
        "many_targets_idle",
        "Idle cost per branch vs branches (4 branch workers)",
        ("branches", "per branch: commands/s, requests/min"),
        {
            "Redis commands/s, steady tick": [
                (r.repositories, r.ticking.redis_per_s / r.repositories) for r in results
            ],
            "Redis commands/s, receivers delivered": [
                (r.repositories, r.trusted.redis_per_s / r.repositories) for r in results
            ],
            "Git requests/min, steady tick": [
                (r.repositories, r.ticking.upload_packs_per_min / r.repositories) for r in results
            ],
            "Git requests/min, receivers delivered": [
                (r.repositories, r.trusted.upload_packs_per_min / r.repositories) for r in results
            ],
        },
    )


NOTE = (
    f"{WORKERS} branch-worker processes and one watcher (product defaults: steady tick "
    "60 s, reconcile period 10 s, lease 15 s; GITOPS_REVERSER_MAX_BRANCHES raised to a "
    "worker's fair share where that is over the default 100, so 1,000 branches are all "
    "owned by the four workers), on the sandbox's API double and Git host, "
    f"this machine's {os.cpu_count()} cores shared with the load. Each GitTarget has its own "
    "namespace, GitProvider and WatchRule; GitTargets over the same repository share its "
    f"branch. Edits go one at a time, round robin over up to {SAMPLED} GitTargets spread "
    "over the branches, each timed from the API write to the repository's tip moving; "
    "each takes turns with a plain git commit + push of one file to another repository on "
    "the same host (the floor). Profiled (py-spy on the owner, 1 GitTarget), an edit's "
    "time is mostly the pass's git processes (the push about three quarters, the commit "
    "most of the rest; Redis under a tenth, the scheduler and the watcher a few ms), so "
    "its latency moves with the machine's load as the floor's does. Profiled at 1,000 "
    "GitTargets (py-spy on the watcher, the four workers and this process, 2026-12-03), "
    "the product's processes were nearly idle and the API double, which runs in this "
    "process, was busy most of each edit: every write woke each of the thousand open "
    "watches (one per GitTarget's namespace), and each read the whole event history; its "
    "watches are now woken only by events of their resource and namespace "
    "(sandbox/kube/store.py, Follower), which took the 1,000-GitTarget p50 from 140 ms "
    "to 46 ms on a quiet machine, the single target's staying at 41-46 ms. Every "
    "GitProvider has a GitHub receiver, and each repository's hook on the Git host posts "
    "to its first GitTarget's. The idle windows start once the last edit is pushed and "
    f"{SETTLE_S:.0f} s have passed: first with only the edited repositories' receivers "
    "having delivered (our own pushes' webhooks), so the other branches read their tip "
    "on the steady tick (Q7); then, after a signed GitHub ping to every repository's "
    "receiver (what GitHub sends when a hook is created; the sandbox Git host sends "
    "pushes only), with every branch's receiver delivered within "
    "GITOPS_REVERSER_REMOTE_TRUST_MAX_AGE (10 min), so no branch makes a Git request "
    "(P14). Git requests are every GET of info/refs?service=git-upload-pack the Git host "
    "served (each ls-remote or fetch starts with one); Redis commands are Redis's "
    "total_commands_processed (the benchmark's private Redis; commands a Lua script runs "
    "count one each). Larger sizes: "
    'BENCH_MANY_TARGETS="1:1,1000:200,5000:1000".'
    " Idle only (BENCH_MANY_IDLE): no edits; the windows start "
    f"{OWNED_SETTLE_S:.0f} s after every branch is owned and started. The rows "
    '"by process" and "top" count what Redis MONITOR showed over a third window, by the '
    "connection's name (each process names its own; a Lua script's commands counted for "
    "the process whose script ran them)."
)
