"""Branch takeover after ``kill -9`` of one of four branch workers, against the lease period.

The sandbox, the watcher and four branch-worker processes (``bench.fleet``, ids ``w0``-``w3``)
serve ``BRANCHES`` repositories with one GitTarget each, under a short lease
(``GITOPS_REVERSER_LEASE_PERIOD``, ``LEASE_S``). Once every branch is leased, the benchmark
kills (SIGKILL, no clean shutdown, so its leases are not released) the worker holding the most
branches and polls every branch's lease key in Redis until each one is held again by a live
worker. The time from the kill to that moment is compared with the lease period: a lease must
expire before anyone may take it, so the lease period is about the floor (a little less:
the killed worker renewed its leases at most a third of a period before it died), and the goal
is 1.5x.
Repeated ``ROUNDS`` times, each with a fresh set of processes. Run alone:
``scripts/with-redis .venv/bin/python -m bench takeover``; ``BENCH_TAKEOVER_BRANCHES`` and
``BENCH_TAKEOVER_LEASE_S`` change the sizes.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.fleet import fleet
from bench.product import wait_for
from bench.report import Section, percentile

WORKERS = 4
BRANCHES = 20
LEASE_S = 3.0
ROUNDS = 3
#: Bound on every branch being leased after start, and on the takeover itself.
SETUP_TIMEOUT_S = 120.0
TAKEOVER_TIMEOUT_S = 60.0
#: Lease keys are read this often while waiting for the takeover (one MGET each time).
POLL_S = 0.01


def _round(root: Path, branches: int, lease_s: float) -> tuple[float, int]:
    """Seconds from the kill until every branch is held by a live worker; branches it held."""
    with fleet(root, lease_period=f"{lease_s:g}s", reconcile_period="2s") as f:
        f.configure(branches, branches)
        f.others.append(f.start_process("watcher"))
        f.start_workers(WORKERS)
        wait_for(
            "every branch to be leased",
            lambda: len(f.holders()) == branches,
            SETUP_TIMEOUT_S,
            0.1,
        )
        victim, held = Counter(f.holders().values()).most_common(1)[0]
        f.kill(victim)
        killed_at = time.perf_counter()

        def owned_again() -> bool:
            holders = f.holders()
            return len(holders) == branches and victim not in holders.values()

        wait_for("every branch to be owned again", owned_again, TAKEOVER_TIMEOUT_S, POLL_S)
        return time.perf_counter() - killed_at, held


def bench() -> Section:
    """``ROUNDS`` kills, each in a fresh fleet."""
    section = Section(
        "Branch takeover after kill -9 of one of four workers",
        "scripts/with-redis .venv/bin/python -m bench takeover",
    )
    branches = int(os.environ.get("BENCH_TAKEOVER_BRANCHES", BRANCHES))
    lease_s = float(os.environ.get("BENCH_TAKEOVER_LEASE_S", LEASE_S))
    times: list[float] = []
    held: list[int] = []
    for n in range(ROUNDS):
        print(f"bench: takeover round {n + 1} of {ROUNDS}", flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            seconds, count = _round(Path(scratch), branches, lease_s)
        times.append(seconds)
        held.append(count)
    section.add("lease period", lease_s, "s", "GITOPS_REVERSER_LEASE_PERIOD")
    section.add(
        "kill -9 to every branch owned again, median",
        percentile(times, 50),
        "s",
        f"{ROUNDS} rounds: " + ", ".join(f"{t:.2f} s" for t in times),
    )
    section.add("kill -9 to every branch owned again, worst", max(times), "s")
    section.add("worst / lease period", max(times) / lease_s, "", "goal: at most 1.5 (floor: 1)")
    section.add(
        "branches the killed worker held",
        percentile([float(h) for h in held], 50),
        "branches",
        f"median; {branches} branches, {WORKERS} workers",
    )
    section.notes.append(
        f"{WORKERS} branch-worker processes and a watcher on the sandbox, {branches} "
        "repositories with one GitTarget each (commitWindow 0s), lease period "
        f"{lease_s:g} s. The worker holding the most branches is killed with SIGKILL (its "
        "leases stay until they expire); a branch is owned again when its lease key names a "
        f"live worker, read with one MGET every {POLL_S * 1000:.0f} ms. A time under the lease "
        "period is possible: the killed worker's leases were last renewed up to a third of a "
        "period before the kill. Each round starts a fresh sandbox and fresh processes."
    )
    return section
