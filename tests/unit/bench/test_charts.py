"""The benchmark page's charts: valid SVG, one line per series, points in x order, and the page
links each chart it writes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from bench.charts import line_chart
from bench.report import Section, render, write

SVG = "{http://www.w3.org/2000/svg}"


def test_a_chart_is_svg_with_one_polyline_per_series_in_x_order() -> None:
    svg = line_chart("t", "objects", "s", {"a": [(10.0, 2.0), (1.0, 1.0)], "b": [(5.0, 7.5)]})
    root = ET.fromstring(svg)
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 2
    xs = [float(pair.split(",")[0]) for pair in lines[0].attrib["points"].split()]
    assert xs == sorted(xs) and len(xs) == 2
    assert {t.text for t in root.findall(f"{SVG}text")} >= {"a", "b", "objects", "s", "t"}


def test_the_page_links_every_chart_it_writes(tmp_path: Path) -> None:
    section = Section("Growth", "python -m bench x")
    section.add("n", 1.0, "s")
    section.chart("growth-time", "Time by objects", ("objects", "s"), {"run": [(1.0, 1.0)]})
    page = tmp_path / "benchmarks.md"
    write([section], page)
    assert "![Time by objects](benchmarks/growth-time.svg)" in page.read_text()
    assert ET.parse(tmp_path / "benchmarks" / "growth-time.svg").getroot().tag == f"{SVG}svg"
    assert "![" not in render([Section("Plain", "cmd")])
