"""MIN_REPLICAS 0 and 1 end to end (issue 28 item 2): API edits mirrored per second and the
receiver's latency, with every product process running against a primary that has a replica.

Two whole systems (``bench.product``: the sandbox and the watcher, branch worker, dispatcher
and receiver processes) run side by side on the same primary (each under its own key prefix),
one with ``GITOPS_REVERSER_REDIS_MIN_REPLICAS=0`` and one with ``1``; they take turns, so load
from elsewhere on the machine falls on both alike:

- edits: a ConfigMap edit through the sandbox Kubernetes API, timed until the remote tip shows
  a new commit (``commitWindow: 0s``), one edit at a time (``bench.mirror``'s end-to-end side).
  With 1, the watcher's publish of the edit waits for the replica before the watch moves on,
  and the branch worker's acknowledgement after its push waits too;
- the receiver: a signed GitHub push delivery for the system's repository, posted open-loop at
  ``RATE`` a second, each on a new connection and timed from its scheduled send time
  (``bench.receiver``'s latency load); with 1, its ``202 stored`` waits for the replica.
"""

from __future__ import annotations

import hashlib
import hmac
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.mirror import EDIT_TIMEOUT_S
from bench.product import (
    NS,
    SETUP_TIMEOUT_S,
    TOKEN,
    ConfigMapEditor,
    Repo,
    configure,
    provider,
    repository,
    target,
    wait_for,
)
from bench.receiver import Load, delivery
from bench.report import Section, percentile
from shared.model.receivers import webhook_path
from shared.store.connection import connect
from tests.e2e.system import ALL, System, run_system

#: Edits per side (the sides alternate, one edit each per round).
EDITS = 60
#: Open-loop deliveries a second, and per side and round; rounds, the sides taking turns.
RATE = 20.0
DELIVERIES = 200
ROUNDS = 3


class _Side:
    """One system: its repository, its ConfigMap, and its receiver's webhook load."""

    def __init__(self, system: System, replicas: int) -> None:
        self.replicas = replicas
        self.repo: Repo = repository(system, "e2e")
        configure(system, [provider(self.repo.url, "0s", receiver=True), target(None)])
        self.configmap = ConfigMapEditor(system, "bench")
        first = self.repo.tip()
        self.configmap.create("created")
        self.tip = self.repo.wait_for_new_tip(first, SETUP_TIMEOUT_S)
        body, headers = _signed(delivery(self.repo.url)[0])
        base = f"http://127.0.0.1:{system.receiver_port}"
        self.load = Load(base, webhook_path(TOKEN.encode(), "bench", NS), body, headers)
        # the watcher publishes the receiver record: until then a delivery is answered 404
        wait_for("the receiver record", self._stored, SETUP_TIMEOUT_S, poll=0.2)
        self.edits: list[float] = []
        self.latencies: list[float] = []

    def _stored(self) -> bool:
        self.load.failures.clear()
        self.load.paced(1.0, 1)
        return not self.load.failures

    def edit(self, i: int) -> None:
        began = _now()
        self.configmap.edit(str(i))
        self.tip = self.repo.wait_for_new_tip(self.tip, EDIT_TIMEOUT_S)
        self.edits.append(_now() - began)

    def deliver(self) -> None:
        self.latencies += [t.latency for t in self.load.paced(RATE, DELIVERIES)]


def _now() -> float:
    return time.perf_counter()


def _signed(body: bytes) -> tuple[bytes, dict[str, str]]:
    """``bench.receiver.delivery``'s body, signed with the GitProvider's webhook secret."""
    signature = "sha256=" + hmac.new(TOKEN.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-Hub-Signature-256": signature,
        "User-Agent": "GitHub-Hookshot/bench",
    }
    return body, headers


@contextmanager
def _system(folder: Path, url: str, replicas: int) -> Iterator[System]:
    yield from run_system(folder, url, ALL, redis_min_replicas=str(replicas))


@contextmanager
def _systems(root: Path, url: str) -> Iterator[list[_Side]]:
    with ExitStack() as stack:
        sides = []
        for replicas in (0, 1):
            system = stack.enter_context(_system(root / f"replicas-{replicas}", url, replicas))
            sides.append(_Side(system, replicas))
        yield sides


def _waits(url: str) -> int:
    """How many ``WAIT`` commands the primary at ``url`` has answered."""
    probe = connect(url, client_name="bench-probe")
    try:
        stats: dict[str, Any] = probe.info("commandstats")
        return int(stats.get("cmdstat_wait", {}).get("calls", 0))
    finally:
        probe.close()


def measure(section: Section, url: str) -> None:
    """Both systems on the primary at ``url`` (which has a replica); rows into ``section``."""
    waits = _waits(url)
    with tempfile.TemporaryDirectory() as scratch, _systems(Path(scratch), url) as sides:
        for i in range(EDITS):
            for k in range(len(sides)):
                sides[(i + k) % len(sides)].edit(i)
        for r in range(ROUNDS):
            for k in range(len(sides)):
                sides[(r + k) % len(sides)].deliver()
        failures = {s.replicas: s.load.failures[:5] for s in sides if s.load.failures}
    if failures:
        raise RuntimeError(f"receiver answers other than 202: {failures}")
    waited = _waits(url) - waits
    one = sides[1]
    if waited < len(one.latencies):  # each 202 of the side with 1 replica waited once
        raise RuntimeError(f"only {waited} WAITs for {len(one.latencies)} deliveries")
    section.add("end to end: WAITs the primary answered", waited, "", "the side with 1 replica's")
    for side in sides:
        label = f"end to end, {side.replicas} replica(s)"
        rate = len(side.edits) / sum(side.edits)
        section.add(f"{label}: API edits mirrored", rate, "edits/s", f"{len(side.edits)} edits")
        section.add(f"{label}: edit to pushed, p50", percentile(side.edits, 50) * 1000, "ms")
        section.add(f"{label}: edit to pushed, p99", percentile(side.edits, 99) * 1000, "ms")
        count = len(side.latencies)
        note = f"{count} deliveries, open loop at {RATE:.0f}/s"
        section.add(
            f"{label}: receiver 202, p50", percentile(side.latencies, 50) * 1000, "ms", note
        )
        section.add(f"{label}: receiver 202, p99", percentile(side.latencies, 99) * 1000, "ms")
    zero, one = sides
    section.add(
        "end to end: edits/s with 1 replica / with 0",
        (len(one.edits) / sum(one.edits)) / (len(zero.edits) / sum(zero.edits)),
        "",
    )
    section.add(
        "end to end: receiver p99 with 1 replica / with 0",
        percentile(one.latencies, 99) / percentile(zero.latencies, 99),
        "",
    )
    section.notes.append(
        "End to end: two whole systems (the sandbox and the watcher, branch worker, dispatcher "
        "and receiver processes, the receiver with one gunicorn worker as the sandbox runs it) "
        "on the same primary under their own key prefixes, one with "
        "GITOPS_REVERSER_REDIS_MIN_REPLICAS=0 and one with 1, taking turns: "
        f"{EDITS} API edits each (commitWindow 0s, each timed from the API write until the "
        "remote tip moves, the next sent only then), then "
        f"{ROUNDS} rounds of {DELIVERIES} signed GitHub push deliveries each, open loop at "
        f"{RATE:.0f}/s on new connections, timed from the scheduled send (the load "
        "generator's own jitter included, as in the receiver section)."
    )
