"""Regenerate (or check) docs/metrics.md: every metric the product serves, from the code.

Each process defines its metrics in its ``metrics.py`` as a class built on a registry; the
watcher's per-GitTarget series are listed in ``services.watcher.gittarget_metrics.FAMILIES``.
This script builds each class on a registry of its own and reads name, type, labels and help
from the metric objects, so the reference cannot drift from the code
(``tests/unit/test_metrics_doc.py`` fails when docs/metrics.md differs from what it writes).

    .venv/bin/python scripts/metrics_doc.py           # rewrite docs/metrics.md
    .venv/bin/python scripts/metrics_doc.py --check   # exit 1 when docs/metrics.md is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402
from prometheus_client.metrics import MetricWrapperBase  # noqa: E402

from services.branch_worker.metrics import BranchWorkerMetrics  # noqa: E402
from services.dispatcher.metrics import DispatcherMetrics  # noqa: E402
from services.receiver.metrics import ReceiverMetrics  # noqa: E402
from services.watcher.gittarget_metrics import FAMILIES  # noqa: E402
from services.watcher.metrics import WatcherMetrics  # noqa: E402
from shared.health import READY_CHECK, READY_CHECK_HELP  # noqa: E402

PAGE = Path("docs/metrics.md")

_HEADER = """\
# Metrics reference

Every series the product serves, generated from the code by `scripts/metrics_doc.py`
(`tests/unit/test_metrics_doc.py` fails while this page is stale; regenerate it with
`.venv/bin/python scripts/metrics_doc.py`). Each process serves `/metrics` on its own port
(chart: `<process>.metricsPort`; the receiver on its webhook port); the chart's opt-in
ServiceMonitor scrapes them all. Every name starts with `gitops_reverser_`.

**Per GitTarget.** The `gitops_reverser_gittarget_*` series carry `namespace` and `name` (the
GitTarget's), as Flux's `gotk_*` and Argo CD's `argocd_app_*` series do. The watcher builds them
at each scrape from its last reconcile pass (every `GITOPS_REVERSER_RECONCILE_PERIOD`, and
after each change it watches), so there is one series set per GitTarget that exists, and a
deleted GitTarget's series are gone after the next pass: cardinality is the number of
GitTargets (times four outcomes for `apply_requests`), never the number of objects or commits.
A watcher that stands by (`watcher.replicas: 2`) serves the same values: aggregate with
`max by (namespace, name)`. `oldest_unpushed_write_seconds` is measured on the GitTarget's
branch (its events stream): GitTargets sharing a branch show the same age.

**Other series** carry small enumerations only (`result`, `reason`, `outcome`, `operation`,
`kind`, resource group/version/resource), except `obligations_owed` and `quiet_wait_seconds`,
which are labelled by the opaque branch key (`inspect` decodes it).

Alerts and the dashboard built on these: [operating.md](operating.md).
"""


@dataclass(frozen=True, slots=True)
class Row:
    """One metric family as the page lists it."""

    process: str
    name: str
    kind: str
    labels: tuple[str, ...]
    help: str


def _exposed(name: str, kind: str) -> str:
    """The name a scrape shows: a counter's ``_total``, a histogram's base name."""
    if kind == "counter" and not name.endswith("_total"):
        return name + "_total"
    return name


def _from_class(process: str, metrics: object) -> Iterator[Row]:
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            kind = value._type
            yield Row(
                process,
                _exposed(value._name, kind),
                kind,
                tuple(value._labelnames),
                value._documentation,
            )


def rows() -> list[Row]:
    """Every metric family of every process, by process then name."""
    found: list[Row] = []
    found += _from_class("branch worker", BranchWorkerMetrics(CollectorRegistry()))
    found += _from_class("dispatcher", DispatcherMetrics(CollectorRegistry()))
    found += _from_class("receiver", ReceiverMetrics(CollectorRegistry()))
    found += _from_class("watcher", WatcherMetrics(CollectorRegistry()))
    found += [Row("watcher", _exposed(f.name, f.kind), f.kind, f.labels, f.help) for f in FAMILIES]
    found.append(
        Row(
            "watcher, branch worker, dispatcher", READY_CHECK, "gauge", ("check",), READY_CHECK_HELP
        )
    )
    return sorted(found, key=lambda r: (r.process, r.name))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The whole page."""
    lines = [_HEADER, "| Metric | Type | Labels | Process | Meaning |", "|---|---|---|---|---|"]
    for row in rows():
        labels = ", ".join(f"`{label}`" for label in row.labels) or "none"
        lines.append(
            f"| `{row.name}` | {row.kind} | {labels} | {row.process} | {_cell(row.help)} |"
        )
    return "\n".join(lines) + "\n"


def regenerate(root: Path = ROOT) -> tuple[str, str]:
    """The page as it is, and as the code says it should be."""
    path = root / PAGE
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    return current, render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    current, wanted = regenerate()
    if args.check:
        if current != wanted:
            print(f"{PAGE} is stale: run .venv/bin/python scripts/metrics_doc.py")
            return 1
        return 0
    (ROOT / PAGE).write_text(wanted, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
