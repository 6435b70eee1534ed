"""Prometheus metrics that add up across processes, including gunicorn's workers.

Under gunicorn each worker is its own process, so a plain registry would expose one worker's
numbers per scrape. When ``PROMETHEUS_MULTIPROC_DIR`` is set (it must be set in the shell that
starts the process, and wiped before each start), metrics are written to files there and a
scrape collects all of them; otherwise the process's own registry is served.

Each process defines its metrics in its own ``metrics.py``, as a class built on a registry.
Every name starts with ``PREFIX`` (``tests/unit/shared/test_metric_names.py`` checks it), so an
operator finds all of the product's series under one name on a shared Prometheus.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
    values,
)

CONTENT_TYPE = CONTENT_TYPE_LATEST
#: The start of every metric name the product registers (O1).
PREFIX = "gitops_reverser_"
#: Collectors that build their series at each scrape from the process's own state (the
#: watcher's per-GitTarget gauges): served by ``exposition`` in both modes, since the
#: multiprocess files hold only the client library's own metric values.
LIVE = CollectorRegistry(auto_describe=False)


def own_exposition(extra: CollectorRegistry | None = None) -> bytes:
    """This process's own metrics and ``LIVE`` (and ``extra``): what a process that is not
    gunicorn serves (in multiprocess mode too, a process's registry reads its own files)."""
    text = generate_latest(REGISTRY) + generate_latest(LIVE)
    return text + generate_latest(extra) if extra is not None else text


def multiprocess_enabled() -> bool:
    """True when the client library writes metric values to files (multiprocess mode)."""
    name: str = values.ValueClass.__name__
    return name != "MutexValue"


def exposition() -> bytes:
    """The text exposition of every metric of this process, or of all processes in the dir."""
    if multiprocess_enabled():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry) + generate_latest(LIVE)
    return generate_latest(REGISTRY) + generate_latest(LIVE)


def wipe_multiprocess_dir(directory: Path) -> None:
    """Empty the multiprocess directory before a server starts, as the client docs require.

    What it holds goes, the directory stays: it is usually a volume's mount point (the chart's
    emptyDir) under a read-only root, which cannot be removed (the receiver died of that)."""
    directory.mkdir(parents=True, exist_ok=True)
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def mark_worker_dead(pid: int) -> None:
    """Forget a dead worker's live gauges (its counters must stay, so totals stay right)."""
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
