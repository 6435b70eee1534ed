"""The attribution join alone (P5): a branch owner's cost of finding the fact of each event.

No Redis, no network: the fact stream is an in-memory stand-in handing the branch worker's
``Attributor`` (services/branch_worker/attribution.py) ``FACTS`` facts of one route and type on
its first read and nothing after, and the clock stands still (no fact ages out). One pass then
asks the author of ``EVENTS`` object events, as a branch's pass does: nine in ten are updates
whose fact is there (the ``exact`` tier), one in ten a delete whose delete fact is there
(``delete_sticky``). Each size is timed ``ROUNDS`` times (a fresh ``Attributor`` each, so the
read and the index are paid every round) in CPU time of this process (``time.process_time``:
the machine is shared, and a busy one stretches wall-clock time far more than CPU time); the
best round is reported, per event.

The owner keeps at most ``MAX_PER_TYPE`` (4,096) facts per route and type; the 10,000-fact
size raises that bound for the measurement only, to show how the cost grows with the index.

Run alone: ``.venv/bin/python -m bench attribution_join``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import cast

from bench.report import Section
from services.branch_worker import attribution
from services.branch_worker.attribution import Attributor
from shared.model.attribution import AuthorFact
from shared.model.events import GitTargetRef, ObjectEvent, Operation
from shared.model.ids import GitTargetUid, ObjectId
from shared.store.attribution import FactStreams
from tests.configs import target_config

EVENTS = 1_000
SIZES = (1_000, 4_096, 10_000)
ROUNDS = 3
ROUTE = "prod"


class _Stream:
    """``FactStreams.read_after`` over a list: everything on the first read, then nothing."""

    def __init__(self, facts: list[AuthorFact]) -> None:
        self._facts = facts

    def read_after(
        self, route: str, group_resource: str, after: str
    ) -> tuple[list[AuthorFact], str, int]:
        if after == "0":
            return list(self._facts), "1", 0
        return [], after, 0


def _facts(count: int) -> list[AuthorFact]:
    """``count`` facts on ``count`` ConfigMaps: every tenth a delete, the others updates."""
    return [
        AuthorFact(
            author=f"user-{i % 17}",
            verb="delete" if i % 10 == 9 else "update",
            group="",
            resource="configmaps",
            namespace="team",
            name=f"cm-{i}",
            uid=f"uid-{i}",
            resource_version=str(1_000 + i),
            audit_id=f"a-{i}",
            stage_timestamp=f"2026-12-02T10:{i // 6000 % 60:02d}:{i // 100 % 60:02d}.{i:06d}Z",
        )
        for i in range(count)
    ]


def _events(facts: list[AuthorFact]) -> list[tuple[str, ObjectEvent]]:
    """``EVENTS`` events spread over the facts, each with its fact there."""
    ref = GitTargetRef(GitTargetUid("t"), "team", "target")
    step = max(1, len(facts) // EVENTS)
    out: list[tuple[str, ObjectEvent]] = []
    for n in range(EVENTS):
        fact = facts[(n * step) % len(facts)]
        oid = ObjectId("", "v1", "configmaps", "ConfigMap", fact.namespace, fact.name)
        operation: Operation = "DELETE" if fact.verb == "delete" else "UPDATE"
        event = ObjectEvent(ref, operation, oid, fact.uid, fact.resource_version, None, (), 0.0)
        out.append((f"{n + 1}-0", event))
    return out


def _round(facts: list[AuthorFact], events: list[tuple[str, ObjectEvent]]) -> float:
    target = dataclasses.replace(
        target_config(
            GitTargetUid("t"), "team", "target", "https://git.example/r", "main", path="apps"
        ),
        audit_route=ROUTE,
    )
    attributor = Attributor(cast(FactStreams, _Stream(facts)), lambda: 100.0, 3.0)
    attributor.new_pass()
    started = time.process_time()
    for entry_id, event in events:
        found = attributor.author(target, entry_id, event)
        assert found is not None and not isinstance(found, attribution.Wait), entry_id
    return time.process_time() - started


def bench() -> Section:
    """Time one pass of ``EVENTS`` joins over each size of fact index."""
    section = Section(
        "Attribution join: one pass of 1,000 events over a fact index",
        ".venv/bin/python -m bench attribution_join",
    )
    kept = attribution.MAX_PER_TYPE
    try:
        for size in SIZES:
            attribution.MAX_PER_TYPE = max(kept, size)
            facts = _facts(size)
            events = _events(facts)
            best = min(_round(facts, events) for _ in range(ROUNDS))
            section.add(
                f"{EVENTS} events x {size} facts, per event",
                best / EVENTS * 1e6,
                "us",
                f"CPU time, best of {ROUNDS}; the pass {best * 1e3:.1f} ms",
            )
    finally:
        attribution.MAX_PER_TYPE = kept
    load = os.getloadavg()[0]
    section.notes.append(
        f"Load average (1 min) {load:.1f} at the end of the run; the read of the stream and the "
        "building of the index are inside the timed pass."
    )
    return section
