"""Growth curves as small SVG line charts, for docs/benchmarks.md.

A benchmark that measures how a cost grows (objects -> seconds, targets -> latency) records its
points in a ``Chart``; ``python -m bench`` writes each chart beside the page
(``docs/benchmarks/<name>.svg``) and the page shows it next to the table. Hand-written SVG keeps
``make bench`` free of a plotting dependency: axes, ticks, one polyline and a legend per series.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 640, 360
#: Room for the tick labels and axis titles around the plot area.
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50
TICKS = 5
#: Distinct colours for up to six series (the Okabe-Ito palette, readable by colour-blind eyes).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart: a file name (no extension), its title, axis titles and the series' points."""

    name: str
    title: str
    x_label: str
    y_label: str
    series: Mapping[str, Sequence[Point]]

    def svg(self) -> str:
        """The chart as a standalone SVG document."""
        return line_chart(self.title, self.x_label, self.y_label, self.series)


def _nice_max(value: float) -> float:
    """A round upper bound for an axis (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= value))


def _label(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.2g}"


def _axes(x_max: float, y_max: float, x_label: str, y_label: str) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>'
    ]
    for i in range(TICKS + 1):
        x = LEFT + plot_w * i / TICKS
        y = TOP + plot_h - plot_h * i / TICKS
        parts += [
            f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{_label(x_max * i / TICKS)}</text>",
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_label(y_max * i / TICKS)}</text>",
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>',
        ]
    parts += [
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">{escape(y_label)}</text>',
    ]
    return parts


def _series(
    index: int, name: str, points: Sequence[Point], x_max: float, y_max: float
) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    colour = COLOURS[index % len(COLOURS)]
    coords = [
        (LEFT + plot_w * x / x_max, TOP + plot_h - plot_h * y / y_max) for x, y in sorted(points)
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    legend_y = TOP + 10 + 18 * index
    return [
        f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>',
        *(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in coords),
        f'<line x1="{WIDTH - RIGHT + 10}" y1="{legend_y}" x2="{WIDTH - RIGHT + 30}" '
        f'y2="{legend_y}" stroke="{colour}" stroke-width="2"/>',
        f'<text x="{WIDTH - RIGHT + 36}" y="{legend_y + 4}">{escape(name)}</text>',
    ]


def line_chart(
    title: str, x_label: str, y_label: str, series: Mapping[str, Sequence[Point]]
) -> str:
    """An SVG line chart of every series, both axes from zero."""
    points = [p for pts in series.values() for p in pts]
    x_max = _nice_max(max((x for x, _ in points), default=1.0))
    y_max = _nice_max(max((y for _, y in points), default=1.0))
    body = [
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>",
        *_axes(x_max, y_max, x_label, y_label),
    ]
    for index, (name, pts) in enumerate(series.items()):
        body += _series(index, name, pts, x_max, y_max)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">\n'
        '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )
