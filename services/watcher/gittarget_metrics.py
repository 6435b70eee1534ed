"""The per-GitTarget series the watcher serves (issue 26), built at each scrape from the rows
of its last reconcile pass: one series set per GitTarget that exists, labelled ``namespace``
and ``name``; a GitTarget that is gone has none after the next pass.

``FAMILIES`` names every series with its type, labels and help; ``collect`` builds them from
it and scripts/metrics_doc.py documents them from it (docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


@dataclass(frozen=True, slots=True)
class TargetRow:
    """One GitTarget as the last pass saw it."""

    namespace: str
    name: str
    ready: bool
    stalled: bool
    #: When the oldest API edit of its branch not yet in Git was published (None: none).
    oldest_unpushed: float | None = None
    #: When the last push that carried its commits landed (None: none recorded).
    last_push: float | None = None
    #: Finished apply requests by outcome; empty for a GitTarget without an applier.
    applies: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Family:
    """One per-GitTarget metric family: its name, type, extra labels and help."""

    name: str
    kind: str  # "gauge" or "counter"
    help: str
    extra_labels: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return ("namespace", "name", *self.extra_labels)

    def family(self) -> GaugeMetricFamily | CounterMetricFamily:
        """An empty family to add this pass's samples to."""
        if self.kind == "counter":
            return CounterMetricFamily(self.name, self.help, labels=list(self.labels))
        return GaugeMetricFamily(self.name, self.help, labels=list(self.labels))


READY = "gitops_reverser_gittarget_ready"
STALLED = "gitops_reverser_gittarget_stalled"
OLDEST_UNPUSHED = "gitops_reverser_gittarget_oldest_unpushed_write_seconds"
LAST_PUSH = "gitops_reverser_gittarget_last_push_timestamp_seconds"
#: A counter: exposed with the ``_total`` suffix.
APPLY_REQUESTS = "gitops_reverser_gittarget_apply_requests"

FAMILIES = (
    Family(READY, "gauge", "1 when the GitTarget's Ready condition is True, else 0"),
    Family(
        STALLED,
        "gauge",
        "1 when the GitTarget's Stalled condition is True (a spec change is needed), else 0",
    ),
    Family(
        OLDEST_UNPUSHED,
        "gauge",
        "Age of the oldest API edit on the GitTarget's branch that no push holds yet; 0 when "
        "every edit is in Git",
    ),
    Family(
        LAST_PUSH,
        "gauge",
        "Unix time of the last push that carried the GitTarget's commits (absent before the first)",
    ),
    Family(
        APPLY_REQUESTS,
        "counter",
        "Finished apply requests of the GitTarget by outcome (Delivered, Stale, NothingToAsk, "
        "Failed); GitTargets with an applier only",
        ("outcome",),
    ),
)


class GitTargetCollector(Collector):
    """The per-GitTarget series, from the rows of the last reconcile pass."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._rows: tuple[TargetRow, ...] = ()

    def update(self, rows: Sequence[TargetRow]) -> None:
        """Replace the rows (a GitTarget not among them has no series any more)."""
        self._rows = tuple(rows)

    def describe(self) -> list[Metric]:
        return []  # built at each scrape: nothing to check against at registration

    def collect(self) -> Iterator[Metric]:
        families = {f.name: f.family() for f in FAMILIES}
        now = self._clock()
        for row in self._rows:
            ids = [row.namespace, row.name]
            families[READY].add_metric(ids, 1.0 if row.ready else 0.0)
            families[STALLED].add_metric(ids, 1.0 if row.stalled else 0.0)
            age = 0.0 if row.oldest_unpushed is None else max(0.0, now - row.oldest_unpushed)
            families[OLDEST_UNPUSHED].add_metric(ids, age)
            if row.last_push is not None:
                families[LAST_PUSH].add_metric(ids, row.last_push)
            for outcome, count in sorted(row.applies.items()):
                families[APPLY_REQUESTS].add_metric([*ids, outcome], float(count))
        yield from families.values()
