"""How soon Flux is asked: from an outside push, and from our own push, to the stamp.

The product's processes (watcher, branch worker, dispatcher, receiver) run against the sandbox
with the Flux doubles, configured as docs/flux.md describes: a GitProvider with a GitHub
receiver (the sandbox Git host sends it a signed webhook on every push), a GitTarget whose
applier is a Kustomization with ``quietPeriod: 2s``, and a GitRepository that never fetches on
its own (interval 24h). The steady tick is 1h, so an outside push is found through its webhook
alone. "The stamp" is the dispatcher's new ``reconcile.fluxcd.io/requestedAt`` value on the
GitRepository, taken from a watch (``bench.stamps``). Two measurements, each sample starting
from a settled system (the previous request Delivered, Flux applied its commit, nothing owed,
the branch quiet):

(a) an outside commit pushed with real git, at a random moment: from the push (the bare
    repository's ref moving) to the stamp of the ForeignCommit request; from the push to the
    receiver storing the notice (the notice's ``received_at`` in the branch's Redis stream);
    and from that notice to the stamp;
(b) a ConfigMap edit through the API, committed and pushed by the product (commitWindow 0s):
    from the remote tip showing the commit to the CatchUp stamp, minus the quiet period; and
    from the write as the branch worker recorded it (``last_write_at``, where the quiet period
    starts, Q2) to the stamp, minus the quiet period.

Where the time goes is split at rq's own record of the request's job (enqueued by the branch
worker, started by the dispatcher), in the rows marked "..".

(d) The attempt's D3 check (``services.dispatcher.mirrored.behind``: every watch's namespace
    listed through its cluster and compared with what the watch recorded) with a namespace of
    10, 1,000 and 10,000 ConfigMaps: for each size a fresh sandbox with the watcher process,
    the ConfigMaps stored before the GitTarget and WatchRule are created, and once the watch
    has caught up (the check finds nothing behind), the check is timed in this process, the
    way the dispatcher calls it, against the same Redis and the sandbox's API double.

Run alone: ``scripts/with-redis .venv/bin/python -m bench apply_trigger``.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.flux_rig import QUIET_PERIOD_S, STEP_TIMEOUT_S, Rig, set_up
from bench.product import (
    GROUP,
    NS,
    SETUP_TIMEOUT_S,
    SLOW_POLL_S,
    provider,
    repository,
    running,
    target,
    wait_for,
)
from bench.report import Section, percentile
from bench.stamps import Stamp, Target, watching
from services.dispatcher.mirrored import behind
from shared.kube.clients import ClientFactory
from shared.settings import Settings
from shared.store.config import ConfigStore
from shared.store.connection import connect
from shared.store.keys import Keys
from shared.store.watches import WatchState
from tests.e2e.system import run_system

#: Outside pushes of (a) and API edits of (b): each sample waits for Flux to finish.
PUSHES = 15
EDITS = 10
#: Before each outside push, a pause drawn uniformly from [0, this): settling ends on the branch
#: worker's own wake (it reads the last outcome), so pushing at once would always land at the
#: same point of its loop; a real push lands anywhere in it. Seeded, so runs are comparable.
DEPHASE_S = 1.0
DEPHASE_SEED = 5
SOURCE = Target("source.toolkit.fluxcd.io", "v1", NS, "gitrepositories", "bench")


@dataclass(slots=True)
class Samples:
    """Seconds per sample, by measure; and the outcomes the requests had."""

    values: dict[str, list[float]] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, seconds: float) -> None:
        self.values.setdefault(what, []).append(seconds)

    def outcome(self, name: str) -> None:
        self.outcomes[name] = self.outcomes.get(name, 0) + 1


def _warm_up(rig: Rig) -> None:
    """A first API edit, committed, pushed and caught up: the folder has something to apply."""
    before, stamp = rig.repo.tip(), rig.stamps.latest().value
    rig.configmap.create("created")
    tip = rig.repo.wait_for_new_tip(before, SETUP_TIMEOUT_S)
    rig.stamps.wait_change(stamp, STEP_TIMEOUT_S)
    rig.settle(tip)


def _dispatch(rig: Rig, stamp: Stamp, since: float, part: str, samples: Samples) -> None:
    """Split the time from ``since`` to ``stamp`` where rq saw the request enqueued and started."""
    times = rig.job_times(stamp.value)
    if times is None:
        return
    enqueued_at, started_at = times
    samples.add(f"{part}_to_enqueued", enqueued_at - since)
    samples.add(f"{part}_enqueued_to_started", started_at - enqueued_at)
    samples.add(f"{part}_started_to_stamp", stamp.seen_at - started_at)


def outside_push(rig: Rig, i: int, pause: float, samples: Samples) -> None:
    """(a) One outside push, ``pause`` seconds after settling, timed to the ForeignCommit stamp."""
    time.sleep(pause)  # a deliberate random phase (DEPHASE_S), not a wait for anything
    before = rig.stamps.latest().value
    commit, pushed_at = rig.push_outside(i)
    stamp = rig.stamps.wait_change(before, STEP_TIMEOUT_S)
    samples.add("push_to_stamp", stamp.seen_at - pushed_at)
    received_at = rig.notice_received_at(commit)
    if received_at is not None:
        samples.add("push_to_notice", received_at - pushed_at)
        samples.add("notice_to_stamp", stamp.seen_at - received_at)
        _dispatch(rig, stamp, received_at, "a", samples)
    samples.outcome(rig.settle(commit))


def _api_edit(rig: Rig, i: int, samples: Samples) -> None:
    """(b) One API edit, timed from its push to the CatchUp stamp."""
    before, tip = rig.stamps.latest().value, rig.repo.tip()
    rig.configmap.edit(str(i))
    tip = rig.repo.wait_for_new_tip(tip, STEP_TIMEOUT_S)
    pushed_at = time.time()
    stamp = rig.stamps.wait_change(before, STEP_TIMEOUT_S)
    quiet_from = rig.last_write_at() + QUIET_PERIOD_S
    samples.add("pushed_to_catch_up", stamp.seen_at - pushed_at - QUIET_PERIOD_S)
    samples.add("write_to_catch_up", stamp.seen_at - quiet_from)
    _dispatch(rig, stamp, quiet_from, "b", samples)
    samples.outcome(rig.settle(tip))


def _measure(scratch: Path) -> Samples:
    samples = Samples()
    with running(scratch / "system", steady_tick="1h") as system:
        repo = set_up(system)
        with watching(system.api, SOURCE) as stamps:
            rig = Rig(system, repo, stamps, scratch)
            _warm_up(rig)
            pauses = random.Random(DEPHASE_SEED)
            for i in range(PUSHES):
                outside_push(rig, i, pauses.uniform(0, DEPHASE_S), samples)
            for i in range(EDITS):
                _api_edit(rig, i, samples)
    return samples


#: Namespace sizes of (d); ``BENCH_CAUGHT_UP_SIZES=10,1000`` picks others.
CAUGHT_UP_SIZES = (10, 1_000, 10_000)
#: Timed D3 checks per size.
CHECKS = 20
#: Longest wait for the watcher to catch up with a preloaded namespace.
CATCH_UP_TIMEOUT_S = 300.0


def _configmap(i: int) -> dict[str, object]:
    meta = {"name": f"cm-{i:05d}", "namespace": NS}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"i": str(i)}}


def caught_up_checks(directory: Path, size: int) -> list[float]:
    """(d) Seconds of each D3 check with ``size`` ConfigMaps in the watched namespace."""
    redis_url = Settings.from_env().redis_url
    with contextmanager(run_system)(directory, redis_url, ("watcher",)) as system:
        system.namespace(NS)
        system.create(
            {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "ClusterProvider",
                "metadata": {"name": "default"},
                "spec": {"accessFrom": {"selector": {}}},
            }
        )
        system.sbx.kube.preload(("", "configmaps"), (_configmap(i) for i in range(size)))
        repo = repository(system, f"checks-{size}")
        rules = [{"apiGroups": [""], "resources": ["configmaps"]}]
        watch_rule = {"targetRef": {"name": "apps"}, "rules": rules}
        meta = {"name": "configs", "namespace": NS}
        kind = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "WatchRule", "metadata": meta}
        for body in (provider(repo.url, "0s", receiver=False), target(None)):
            system.create(body)
        system.create({**kind, "spec": watch_rule})
        settings = Settings.from_env(system.env)
        client = connect(redis_url, "bench")
        keys = Keys(system.env["GITOPS_REVERSER_KEY_PREFIX"])
        configs, watches = ConfigStore(client, keys), WatchState(client, keys)
        kube = ClientFactory(settings, time.time).local().client

        def check() -> list[str]:
            return behind(repo.branch_key, configs, watches, lambda _cluster: kube)

        def caught_up() -> bool:
            return bool(watches.feeds([t.uid for t in configs.targets_of(repo.branch_key)])) and (
                not check()
            )

        wait_for("the watch to catch up", caught_up, CATCH_UP_TIMEOUT_S, SLOW_POLL_S)
        seconds = []
        for _ in range(CHECKS):
            start = time.perf_counter()
            late = check()
            seconds.append(time.perf_counter() - start)
            if late:
                raise RuntimeError(f"bench: the watch fell behind: {late[:3]}")
    return seconds


def caught_up_sizes() -> tuple[int, ...]:
    """The sizes of (d): ``CAUGHT_UP_SIZES``, or those ``BENCH_CAUGHT_UP_SIZES`` names."""
    chosen = os.environ.get("BENCH_CAUGHT_UP_SIZES", "")
    return tuple(int(s) for s in chosen.split(",") if s.strip()) or CAUGHT_UP_SIZES


def add_check_rows(section: Section, scratch: Path) -> None:
    """(d): each size's D3 check, p50 and p99, and per listed object."""
    for size in caught_up_sizes():
        print(f"bench: D3 check with {size} ConfigMaps ...", flush=True)
        values = caught_up_checks(scratch / f"checks-{size}", size)
        what = f"(d) D3 check (list + compare), namespace of {size:,} ConfigMaps"
        p50 = percentile(values, 50)
        section.add(f"{what}, p50", p50 * 1000, "ms", f"{len(values)} checks")
        section.add(f"{what}, p99", percentile(values, 99) * 1000, "ms")
        section.add(f"{what}, p50 per object", p50 / size * 1e6, "us/object")


#: (sample key, what it measures, whether its p99 is reported too).
ROWS = (
    ("push_to_stamp", "(a) outside push to ForeignCommit stamp", True),
    ("push_to_notice", "(a) outside push to notice stored by the receiver", True),
    ("notice_to_stamp", "(a) notice stored to ForeignCommit stamp", True),
    ("a_to_enqueued", "(a) .. notice stored to request enqueued (branch worker)", False),
    ("a_enqueued_to_started", "(a) .. enqueued to started (dispatcher)", False),
    ("a_started_to_stamp", "(a) .. started to stamp seen (attempt's checks)", False),
    ("pushed_to_catch_up", "(b) our push to CatchUp stamp, minus quietPeriod", True),
    (
        "write_to_catch_up",
        "(b) our write (last_write_at) to CatchUp stamp, minus quietPeriod",
        True,
    ),
    ("b_to_enqueued", "(b) .. quiet period over to request enqueued (branch worker)", False),
    ("b_enqueued_to_started", "(b) .. enqueued to started (dispatcher)", False),
    ("b_started_to_stamp", "(b) .. started to stamp seen (attempt's checks)", False),
)


def add_rows(section: Section, samples: Samples, rows: tuple[tuple[str, str, bool], ...]) -> str:
    """Each row's p50 (and p99 where asked) in milliseconds; the outcomes, as a phrase."""
    for key, what, tail in rows:
        values = samples.values.get(key, [])
        if not values:
            section.notes.append(f"{what}: no samples.")
            continue
        note = f"{len(values)} samples"
        section.add(f"{what}, p50", percentile(values, 50) * 1000, "ms", note)
        if tail:
            section.add(f"{what}, p99", percentile(values, 99) * 1000, "ms", note)
    return ", ".join(f"{n} x {name}" for name, n in sorted(samples.outcomes.items()))


def bench() -> Section:
    """Measure (a) and (b) in one run of the whole product."""
    section = Section(
        "Apply trigger: from a push to the Flux stamp",
        "scripts/with-redis .venv/bin/python -m bench apply_trigger",
    )
    with tempfile.TemporaryDirectory() as scratch:
        samples = _measure(Path(scratch))
        outcomes = add_rows(section, samples, ROWS)
        add_check_rows(section, Path(scratch))
    section.notes.append(
        f"quietPeriod {QUIET_PERIOD_S:.0f}s, commitWindow 0s, steady tick 1h; GitHub JSON "
        f"webhooks from the sandbox Git host. Requests recorded in the ledger: {outcomes}. "
        "A stamp is seen through a watch on the GitRepository; each sample starts once the "
        "previous request was Delivered, Flux applied its commit and the branch was quiet "
        f"(and, for (a), after a random pause of up to {DEPHASE_S:.0f}s). Rows marked '..' "
        "split a sample at rq's enqueued_at and started_at of the request's job. (d) runs "
        "apart, a fresh sandbox and watcher process per size: the ConfigMaps are stored "
        "before the WatchRule, and the check is timed in the benchmark's process once the "
        f"watch caught up, {CHECKS} times; one watch, so one list of the namespace per check."
    )
    return section
