"""The per-GitTarget series (issue 26 §2): one set per GitTarget of the last pass, ages from
the injected clock, gone when the GitTarget is; served by ``shared.metrics.exposition``."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry

from services.watcher.gittarget_metrics import GitTargetCollector, TargetRow
from services.watcher.metrics import WatcherMetrics
from shared import metrics as shared_metrics


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sample(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"gitops_reverser_gittarget_{metric}", labels)


def test_one_series_set_per_git_target_and_none_once_it_is_gone() -> None:
    clock = Clock()
    registry = CollectorRegistry()
    collector = GitTargetCollector(clock)
    registry.register(collector)
    a = TargetRow("team-a", "web", ready=True, stalled=False, oldest_unpushed=990.0)
    b = TargetRow(
        "team-b",
        "db",
        ready=False,
        stalled=True,
        last_push=900.0,
        applies={"Delivered": 2, "Failed": 1},
    )
    collector.update([a, b])
    assert _sample(registry, "ready", namespace="team-a", name="web") == 1.0
    assert _sample(registry, "stalled", namespace="team-b", name="db") == 1.0
    assert _sample(registry, "oldest_unpushed_write_seconds", namespace="team-a", name="web") == 10
    clock.now += 50
    assert _sample(registry, "oldest_unpushed_write_seconds", namespace="team-a", name="web") == 60
    assert _sample(registry, "oldest_unpushed_write_seconds", namespace="team-b", name="db") == 0
    assert _sample(registry, "last_push_timestamp_seconds", namespace="team-b", name="db") == 900
    assert _sample(registry, "last_push_timestamp_seconds", namespace="team-a", name="web") is None
    failed = {"namespace": "team-b", "name": "db", "outcome": "Failed"}
    assert _sample(registry, "apply_requests_total", **failed) == 1.0

    collector.update([a])
    assert _sample(registry, "ready", namespace="team-b", name="db") is None
    assert _sample(registry, "apply_requests_total", **failed) is None
    series = [s for m in registry.collect() for s in m.samples]
    assert {(s.labels["namespace"], s.labels["name"]) for s in series} == {("team-a", "web")}


def test_the_process_metrics_serve_the_git_target_series() -> None:
    """On the default registry the collector goes on ``shared.metrics.LIVE``, which
    ``exposition`` serves (in multiprocess mode too, beside the files)."""
    metrics = WatcherMetrics()
    try:
        metrics.gittargets.update([TargetRow("ns-x", "served", ready=True, stalled=False)])
        text = shared_metrics.exposition().decode()
        assert 'gitops_reverser_gittarget_ready{name="served",namespace="ns-x"} 1.0' in text
    finally:
        shared_metrics.LIVE.unregister(metrics.gittargets)
        for counter in (metrics.events, metrics.restarts, metrics.relists, metrics.status_writes):
            REGISTRY.unregister(counter)
