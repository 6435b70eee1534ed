"""The initial snapshot of a large namespace, beside a plain PyYAML + git script (issue 9).

For each size N the sandbox starts afresh with a namespace that already holds N small
ConfigMaps and N/10 Argo CD Applications (stored straight into the API double: creating them
over HTTP would take minutes and is not what is measured). The watcher and one branch worker
run as processes, as a user runs them. Then the GitProvider, GitTarget and WatchRule are
created through the official client, and the clock runs from the GitTarget's creation until
the remote branch holds every object's file (the bare repository's tip, read from outside).

The floor is a script that writes the same files with PyYAML into a clone of an empty
repository on the same Git host, then makes one commit and one push: what any design must at
least spend to put N files into Git.

Memory is read from outside as well: the watcher's and branch worker's peak and current
resident set (``/proc/<pid>/status`` VmHWM and VmRSS) and Redis ``used_memory``, each before
the configuration is created (idle) and once everything is pushed and acknowledged; the
growth over idle, divided by the objects mirrored, is the cost per object.

Each size also runs a second time in a fresh sandbox with the benchmarks' plain writer (the
branch-worker process started as ``python -m bench.plain``: the same process with
``bench.plain.PlainTree`` as its work trees, the writer without what issue 14 added to every
write), the two taking turns across sizes, so issue 14's goal (as built at most 20% slower) is
a ratio taken in one run.

``BENCH_SNAPSHOT_SIZES`` (e.g. ``10000,100000``), ``BENCH_SNAPSHOT_ROUNDS`` and
``BENCH_SNAPSHOT_WINDOW`` (the commitWindow, ``5s`` by default) choose what runs;
``BENCH_PYSPY_DIR`` records the watcher, the branch worker and this process with py-spy over
each run's timed part (``bench.profile``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import yaml

from bench.product import (
    BRANCH,
    FOLDER,
    GROUP,
    NS,
    SETUP_TIMEOUT_S,
    SLOW_POLL_S,
    Repo,
    provider,
    read_tip,
    repository,
    wait_for,
)
from bench.profile import directory as profile_directory
from bench.profile import profiled
from bench.report import Section, load_average
from sandbox.githost.outside import OutsideClone, git
from sandbox.processes import procfile
from shared.settings import Settings
from shared.store.connection import connect
from shared.store.keys import Keys
from tests.e2e.system import System, run_system_as

#: Sizes measured by default; ``BENCH_SNAPSHOT_SIZES=1000,10000,100000`` picks others.
SIZES = (1_000, 10_000, 100_000)
#: One custom resource for every this many ConfigMaps.
CR_EVERY = 10
#: Longest wait for one snapshot to reach Git, so the benchmark always ends (110,000 objects
#: take about 100 s on a quiet 2-core machine, several times that on a busy one).
SNAPSHOT_TIMEOUT_S = 1200.0
#: Longest wait for the events stream to drain after the last push (acks follow the push).
DRAIN_TIMEOUT_S = 60.0
#: How often the remote tip is read (one small file read).
POLL_S = 0.05
#: The processes whose memory is read.
MEASURED = ("watcher", "branch_worker")
#: The branch-worker process with the benchmarks' plain writer (``bench.plain``).
PLAIN_WORKER = f"{sys.executable} -m bench.plain"


def configmap(i: int) -> dict[str, Any]:
    """The i-th small ConfigMap: two short keys."""
    meta = {"name": f"cm-{i:05d}", "namespace": NS}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": _data(i)}


def _data(i: int) -> dict[str, str]:
    return {"index": str(i), "greeting": f"hello from object {i}"}


def application(i: int) -> dict[str, Any]:
    """The i-th Argo CD Application: a custom resource nothing in the sandbox acts on."""
    spec = {
        "project": "default",
        "source": {"repoURL": "https://git.example.com/apps.git", "path": f"app-{i}"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "apps"},
    }
    meta = {"name": f"app-{i:05d}", "namespace": NS}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta,
        "spec": spec,
    }


def files(size: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a size, with the path the GitTarget places it at (M4)."""
    for i in range(size):
        yield f"{FOLDER}/{NS}/configmaps/cm-{i:05d}.yaml", configmap(i)
    for i in range(size // CR_EVERY):
        yield f"{FOLDER}/{NS}/argoproj.io/applications/app-{i:05d}.yaml", application(i)


@dataclass(frozen=True, slots=True)
class Memory:
    """Peak and current resident set of one process, in bytes."""

    hwm: int
    rss: int


@dataclass(frozen=True, slots=True)
class Run:
    """One snapshot of one size, measured."""

    objects: int
    seconds: float
    commits: int
    idle: dict[str, Memory]
    done: dict[str, Memory]
    redis_idle: int
    redis_peak: int
    redis_done: int
    #: The 1-minute load average before and after (the machine may be shared).
    load: tuple[str, str] = ("", "")


def _status(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0]) * 1024
    return values


def _session_members(sid: int) -> list[int]:
    """Process ids in a session: the product process may be a child of its shell."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ...
            members.append(int(entry.name))
    return members


def memory(system: System, name: str) -> Memory:
    """The resident memory of a product process (the largest process of its session)."""
    sid = system.procs.pid(name)
    if sid is None:
        raise RuntimeError(f"bench: {name} is not running")
    best = Memory(0, 0)
    for pid in _session_members(sid):
        try:
            status = _status(pid)
        except OSError:
            continue
        if status.get("VmRSS", 0) > best.rss:
            best = Memory(status.get("VmHWM", 0), status.get("VmRSS", 0))
    return best


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _prepare(system: System, size: int) -> Repo:
    """The namespace and its objects, a ClusterProvider admitting it, and the repository."""
    system.namespace(NS)
    system.create(
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "ClusterProvider",
            "metadata": {"name": "default"},
            "spec": {"accessFrom": {"selector": {}}},
        }
    )
    kube = system.sbx.kube
    kube.preload(("", "configmaps"), (configmap(i) for i in range(size)))
    kube.preload(("argoproj.io", "applications"), (application(i) for i in range(size // CR_EVERY)))
    return repository(system, f"snapshot-{size}")


def _configure(system: System, url: str) -> None:
    """The GitProvider (default commit window), the GitTarget, then the WatchRule."""
    target = {"providerRef": {"name": "bench"}, "branch": BRANCH, "path": FOLDER}
    rules = [
        {"apiGroups": [""], "resources": ["configmaps"]},
        {"apiGroups": ["argoproj.io"], "resources": ["applications"]},
    ]
    version = f"{GROUP}/v1alpha1"
    for kind, name, spec in (
        ("GitTarget", "apps", target),
        ("WatchRule", "everything", {"targetRef": {"name": "apps"}, "rules": rules}),
    ):
        meta = {"name": name, "namespace": NS}
        system.create({"apiVersion": version, "kind": kind, "metadata": meta, "spec": spec})


def _wait_started(system: System, client: redis.Redis) -> None:
    """Both processes are past their start-up (imports, first pass) before idle memory is
    read: the watcher has written the GitProvider's conditions, the worker its heartbeat."""
    workers = Keys(system.env["GITOPS_REVERSER_KEY_PREFIX"]).workers

    def started() -> bool:
        status = system.get(GROUP, "v1alpha1", NS, "gitproviders", "bench").get("status") or {}
        return bool(status.get("conditions")) and bool(client.zcard(workers))

    wait_for("the watcher and branch worker to start", started, SETUP_TIMEOUT_S, SLOW_POLL_S)


def _files_at(repo: Repo, tip: str) -> int:
    out = git("ls-tree", "-r", "--name-only", tip, FOLDER, cwd=repo.bare)
    return sum(path.endswith(".yaml") for path in out.splitlines())  # not the bootstrap files


class _Watch:
    """Polls the remote tip and samples Redis memory until every file is there."""

    def __init__(self, repo: Repo, client: redis.Redis, expected: int) -> None:
        self.repo, self.client, self.expected = repo, client, expected
        self.peak = 0

    def until_pushed(self, first: str, start: float) -> str:
        tip, sampled = first, 0.0
        while True:
            now = time.perf_counter()
            if now - start > SNAPSHOT_TIMEOUT_S:
                raise RuntimeError(f"bench: the snapshot took over {SNAPSHOT_TIMEOUT_S}s")
            if now - sampled > 0.5:
                self.peak, sampled = max(self.peak, _used(self.client)), now
            current = read_tip(self.repo.bare)
            if current != tip:
                tip = current
                if _files_at(self.repo, tip) >= self.expected:
                    return tip
            time.sleep(POLL_S)  # the effect is in other processes: nothing here to block on

    def until_drained(self) -> None:
        """The events stream is empty: every event acknowledged after its push (M8)."""
        key = self.repo.keys.branch_events(self.repo.branch_key)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while self.client.xlen(key):
            if time.monotonic() > deadline:
                raise RuntimeError("bench: events still unacknowledged after the push")
            time.sleep(POLL_S)


def snapshot(
    directory: Path, size: int, plain: bool = False, with_floor: bool = True
) -> tuple[Run, float | None]:
    """A fresh sandbox and product: one snapshot of ``size`` ConfigMaps (+ size/10 CRs), then
    the floor script against the same Git host; the run and the floor's seconds. With
    ``plain`` the branch worker runs the benchmarks' plain writer, and no floor is run."""
    redis_url = Settings.from_env().redis_url
    client = connect(redis_url, "bench")
    commands = {**procfile(), "branch_worker": PLAIN_WORKER} if plain else None
    run_system = contextmanager(run_system_as)
    with run_system(None, directory, redis_url, MEASURED, {}, commands=commands) as system:
        repo = _prepare(system, size)
        system.create(provider(repo.url, window(), receiver=False))
        _wait_started(system, client)
        idle = {name: memory(system, name) for name in MEASURED}
        redis_idle = _used(client)
        first = repo.tip()
        watch = _Watch(repo, client, size + size // CR_EVERY)
        load_before = load_average()
        out = profile_directory()  # BENCH_PYSPY_DIR: py-spy over the timed part (bench.profile)
        pids = {name: pid for name in MEASURED if (pid := system.procs.pid(name)) is not None}
        where = out / f"{size}-{'plain' if plain else 'built'}" if out else None
        with profiled({**pids, "bench": os.getpid()}, where):
            start = time.perf_counter()
            _configure(system, repo.url)
            tip = watch.until_pushed(first, start)
            seconds = time.perf_counter() - start
        watch.until_drained()
        done = {name: memory(system, name) for name in MEASURED}
        commits = int(git("rev-list", "--count", f"{first}..{tip}", cwd=repo.bare))
        _check(repo, tip, size, plain)
        run = Run(
            objects=size + size // CR_EVERY,
            seconds=seconds,
            commits=commits,
            idle=idle,
            done=done,
            redis_idle=redis_idle,
            redis_peak=max(watch.peak, _used(client)),
            redis_done=_used(client),
            load=(load_before, load_average()),
        )
        floor_s = None
        if with_floor and not plain:
            floor_s = floor(directory, system.repo(f"floor-{size}"), size)
    return run, floor_s


def _check(repo: Repo, tip: str, size: int, plain: bool) -> None:
    """The last ConfigMap's file holds its data: what was timed is the mirror, whole; and the
    writer was the one asked for (the plain writer brings no bootstrap README.md, P4)."""
    last = f"{FOLDER}/{NS}/configmaps/cm-{size - 1:05d}.yaml"
    mirrored = yaml.safe_load(git("show", f"{tip}:{last}", cwd=repo.bare))
    if mirrored.get("data") != _data(size - 1):
        raise RuntimeError(f"bench: {last} holds {mirrored.get('data')}")
    names = git("ls-tree", "--name-only", tip, f"{FOLDER}/", cwd=repo.bare).splitlines()
    if (f"{FOLDER}/README.md" in names) == plain:
        raise RuntimeError(f"bench: the {'plain' if plain else 'built'} writer's tree: {names}")


def floor(directory: Path, url: str, size: int) -> float:
    """Seconds to write every file with PyYAML, commit once and push once."""
    clone = OutsideClone(url, directory / f"floor-{size}", timeout=SNAPSHOT_TIMEOUT_S)
    start = time.perf_counter()
    for path, body in files(size):
        target = clone.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(body, sort_keys=False))
    clone.git("add", "-A")
    clone.git("commit", "-qm", f"{size} objects")
    clone.push()
    return time.perf_counter() - start


def sizes() -> tuple[int, ...]:
    """The sizes to run: ``SIZES``, or those ``BENCH_SNAPSHOT_SIZES`` names."""
    chosen = os.environ.get("BENCH_SNAPSHOT_SIZES", "")
    return tuple(int(s) for s in chosen.split(",") if s.strip()) or SIZES


def window() -> str:
    """The GitProvider's ``commitWindow``: ``BENCH_SNAPSHOT_WINDOW``, else the default ``5s``
    (M6: the window closes that long after the last write, so it is part of every run's time;
    a shorter one shows how much)."""
    return os.environ.get("BENCH_SNAPSHOT_WINDOW", "") or "5s"


def snapshot_rounds() -> int:
    """Rounds of the as-built / plain-writer pair per size (``BENCH_SNAPSHOT_ROUNDS``, 1)."""
    return max(1, int(os.environ.get("BENCH_SNAPSHOT_ROUNDS", "1") or "1"))


MIB = 1024 * 1024


def _rows(section: Section, run: Run, floor_s: float, built: list[Run], plain: list[Run]) -> None:
    n = run.objects
    what = f"{n:,} objects"
    section.add(
        f"{what}: GitTarget created to all pushed",
        run.seconds,
        "s",
        f"{run.commits} commits; load average {run.load[0]} before, {run.load[1]} after",
    )
    rounds = f"{len(plain)} round{'s' if len(plain) > 1 else ''}"
    section.add(
        f"{what}: the same, plain writer (bench.plain)",
        sum(p.seconds for p in plain) / len(plain),
        "s",
        f"mean of {rounds}; as built: {', '.join(f'{b.seconds:.1f}' for b in built)} s",
    )
    section.add(
        f"{what}: as built / plain writer, speed",
        sum(p.seconds for p in plain) / sum(b.seconds for b in built),
        "",
        f"issue 14 goal: at least 0.8 ({rounds}, taking turns)",
    )
    section.add(f"{what}: floor (PyYAML, one commit, one push)", floor_s, "s")
    section.add(
        f"{what}: speed ratio to the floor", floor_s / run.seconds, "", "goal: >= 0.9 (issue 29)"
    )
    for name in MEASURED:
        idle, done = run.idle[name], run.done[name]
        section.add(
            f"{what}: {name} peak resident (VmHWM)",
            done.hwm / MIB,
            "MiB",
            f"idle {idle.rss / MIB:.1f} MiB, now {done.rss / MIB:.1f} MiB",
        )
        section.add(
            f"{what}: {name} peak growth per object", (done.hwm - idle.rss) / n, "bytes/object"
        )
    section.add(
        f"{what}: Redis used_memory per object, pushed",
        (run.redis_done - run.redis_idle) / n,
        "bytes/object",
        f"peak during the snapshot {(run.redis_peak - run.redis_idle) / n:,.0f} bytes/object",
    )


def _charts(section: Section, runs: list[tuple[Run, float]]) -> None:
    section.chart(
        "snapshot_time",
        "Initial snapshot: seconds to all pushed",
        ("objects in the namespace", "seconds"),
        {
            "product": [(r.objects, r.seconds) for r, _ in runs],
            "floor (PyYAML + git)": [(r.objects, f) for r, f in runs],
        },
    )
    series: dict[str, list[tuple[float, float]]] = {
        f"{name} (VmHWM growth)": [
            (r.objects, (r.done[name].hwm - r.idle[name].rss) / r.objects) for r, _ in runs
        ]
        for name in MEASURED
    }
    series["Redis used_memory"] = [
        (r.objects, (r.redis_done - r.redis_idle) / r.objects) for r, _ in runs
    ]
    section.chart(
        "snapshot_memory",
        "Memory per mirrored object",
        ("objects in the namespace", "bytes per object"),
        series,
    )
    section.chart(
        "snapshot_growth",
        "Memory growth over idle",
        ("objects in the namespace", "MiB"),
        growth_series([r for r, _ in runs]),
    )


def growth_series(runs: list[Run]) -> dict[str, list[tuple[float, float]]]:
    """Each process's peak growth over its idle resident set, and Redis's growth at its peak
    and once pushed, in MiB against the objects: the whole cost, not divided, so a fixed
    start-up cost shows as the line's offset and the cost per object as its slope."""
    series: dict[str, list[tuple[float, float]]] = {
        f"{name} (VmHWM)": [(r.objects, (r.done[name].hwm - r.idle[name].rss) / MIB) for r in runs]
        for name in MEASURED
    }
    series["Redis, peak"] = [(r.objects, (r.redis_peak - r.redis_idle) / MIB) for r in runs]
    series["Redis, pushed"] = [(r.objects, (r.redis_done - r.redis_idle) / MIB) for r in runs]
    return series


def bench() -> Section:
    """Each size in a fresh sandbox, the floor beside it; rows, then growth charts."""
    section = Section(
        "Initial snapshot of a large namespace, beside a PyYAML + git script",
        "scripts/with-redis .venv/bin/python -m bench snapshot",
    )
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for turn, size in enumerate(sizes()):
            built: list[Run] = []
            plain_runs: list[Run] = []
            floors: list[float] = []
            for r in range(snapshot_rounds()):
                first = bool((turn + r) % 2)  # who goes first alternates
                for plain in (first, not first):
                    label = "plain writer" if plain else "as built"
                    print(f"bench: snapshot of {size} ConfigMaps, {label} ...", flush=True)
                    where = Path(scratch) / f"n{size}-{r}-{'plain' if plain else 'built'}"
                    run, floor_s = snapshot(where, size, plain, with_floor=not floors)
                    print(f"bench:   {run.seconds:.1f}s", flush=True)
                    (plain_runs if plain else built).append(run)
                    if floor_s is not None:
                        floors.append(floor_s)
                        print(f"bench:   floor {floor_s:.1f}s", flush=True)
            runs.append((built[0], floors[0]))
            _rows(section, built[0], floors[0], built, plain_runs)
    _charts(section, runs)
    section.notes.append(
        f"Each size runs in a fresh sandbox with the watcher and one branch worker as processes; "
        f"the namespace holds N ConfigMaps and N/{CR_EVERY} Argo CD Applications before the "
        f"GitProvider (commitWindow {window()}; 5s is the default: M6 closes the window that "
        f"long after the last write, so it is part of the time), GitTarget and WatchRule are "
        f"created; the time runs from the GitTarget's creation until the bare repository's tip "
        f"holds every file. Resident memory is read from /proc/<pid>/status; growth per object "
        f"is the peak (VmHWM) less the idle resident set before the configuration, over the "
        f"objects. Redis used_memory is read after every event was acknowledged (streams "
        f"trimmed) and sampled twice a second during the snapshot. The plain writer's run is the "
        f"same in its own fresh sandbox, the branch worker started as python -m bench.plain (the "
        f"benchmarks' plain writer: no in-place editing, no digests, no .gittargetignore check, "
        f"no bootstrap files); the two runs of a size take turns going first, round by round "
        f"(BENCH_SNAPSHOT_ROUNDS, 1 by default); the other rows are the first as-built run's."
    )
    return section
