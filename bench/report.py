"""Benchmark results and the page they are written to (docs/benchmarks.md).

Numbers are measured by ``make bench`` on the machine it runs on; the page records that
machine and the date, so a number is never read without knowing where it came from.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.charts import Chart, Point


@dataclass(frozen=True, slots=True)
class Row:
    """One measured number."""

    what: str
    value: float
    unit: str
    note: str = ""


@dataclass(slots=True)
class Section:
    """The results of one benchmark, with how to run it alone."""

    title: str
    command: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)

    def add(self, what: str, value: float, unit: str, note: str = "") -> None:
        """Record a number."""
        self.rows.append(Row(what, value, unit, note))

    def chart(
        self,
        name: str,
        title: str,
        axes: tuple[str, str],
        series: dict[str, list[Point]],
    ) -> None:
        """Record a growth curve, drawn as ``docs/benchmarks/<name>.svg`` beside the table."""
        self.charts.append(Chart(name, title, axes[0], axes[1], series))


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100) of ``samples``, by the inclusive method."""
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


def load_average() -> str:
    """The 1-minute load average now: the machine may be shared, so it goes beside figures."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


def _first_line(*cmd: str) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False).stdout
    except OSError:
        return "not found"
    return out.strip().splitlines()[0] if out.strip() else "not found"


def machine() -> list[str]:
    """What the numbers were measured on."""
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("model name")
        ]
        cpu = names[0] if names else cpu
    mem_kb = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        mem_kb = int(meminfo.read_text().split()[1])
    return [
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
        f"{mem_kb / 1024 / 1024:.1f} GiB memory, {platform.platform()}",
        f"- python {platform.python_version()}, {_first_line('git', '--version')}, "
        f"{_first_line('redis-server', '--version')}",
    ]


def _format(value: float) -> str:
    if isinstance(value, int):  # a count
        return f"{value:,}"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def render(sections: list[Section]) -> str:
    """The whole benchmarks page."""
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`python -m bench`); every number below "
        "was measured in that run, on this machine:",
        "",
        *machine(),
        "",
    ]
    for section in sections:
        lines += [
            f"## {section.title}",
            "",
            f"Run alone: `{section.command}`",
            "",
            "| measure | value | unit | note |",
            "|---|---|---|---|",
        ]
        lines += [f"| {r.what} | {_format(r.value)} | {r.unit} | {r.note} |" for r in section.rows]
        if section.charts:
            lines += ["", *(f"![{c.title}](benchmarks/{c.name}.svg)" for c in section.charts)]
        lines += ["", *section.notes, ""] if section.notes else [""]
    return "\n".join(lines).rstrip() + "\n"


def write(sections: list[Section], page: Path) -> None:
    """Write the page and, in ``<page folder>/benchmarks/``, every chart it shows."""
    folder = page.parent / "benchmarks"
    for section in sections:
        for chart in section.charts:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{chart.name}.svg").write_text(chart.svg())
    page.write_text(render(sections))
