"""The chart's alerts and dashboard (issue 26 §3), checked with the tools that read them.

The PrometheusRule the chart renders (``prometheusRule.enabled``) is written out as a rule file
and given to ``promtool check rules`` (syntax, PromQL, templates) and ``promtool test rules``
with ``promtool/alerts_test.yaml``: each alert fires on the series that mean its trouble, with
its labels and rendered annotations, and stays quiet on healthy or recovering series. The
dashboard and the alerts name only series the product serves (docs/metrics.md, from the code).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.paths import REPO_ROOT
from tests.integration.chart.render import Rendered, render

pytestmark = pytest.mark.integration

CASES = Path(__file__).parent / "promtool" / "alerts_test.yaml"
ALERTS = {
    "GitOpsReverserMirroringStuck",
    "GitOpsReverserGitTargetStalled",
    "GitOpsReverserApplyRequestsFailing",
    "GitOpsReverserReceiverRefusingDeliveries",
    "GitOpsReverserRedisUnreachable",
}
ON = {"prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}}


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        why = "promtool is not installed (Debian: apt-get install -y prometheus; .ci/run does)"
        warnings.warn(f"PROMTOOL WAS NOT RUN: {why}", stacklevel=2)
        pytest.skip(f"PROMTOOL WAS NOT RUN: {why}")
    return found


def _rules(found: Rendered) -> dict[str, Any]:
    (rule,) = found.of_kind("PrometheusRule")
    spec: dict[str, Any] = rule["spec"]
    return spec


def _write_rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(_rules(render(ON))), encoding="utf-8")
    return path


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rules_pass_promtool_check(tmp_path: Path) -> None:
    done = _run("check", "rules", str(_write_rules(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in done.stdout


def test_the_alerts_fire_when_they_should_and_only_then(tmp_path: Path) -> None:
    rules = _write_rules(tmp_path)
    cases = tmp_path / "alerts_test.yaml"
    cases.write_text(CASES.read_text(encoding="utf-8").replace("RULES", rules.name))
    done = _run("test", "rules", str(cases), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_catches_a_broken_expectation(tmp_path: Path) -> None:
    """The cases above can fail: the stuck alert expected at 10 minutes (it is not firing yet)
    makes promtool exit non-zero."""
    rules = _write_rules(tmp_path)
    broken = CASES.read_text(encoding="utf-8").replace("RULES", rules.name)
    quiet = "      - eval_time: 10m\n        alertname: GitOpsReverserMirroringStuck\n"
    assert quiet + "        exp_alerts: []" in broken
    broken = broken.replace(
        quiet + "        exp_alerts: []",
        quiet + "        exp_alerts:\n          - exp_labels: {severity: critical}",
        1,
    )
    cases = tmp_path / "broken_test.yaml"
    cases.write_text(broken)
    done = _run("test", "rules", str(cases), cwd=tmp_path)
    assert done.returncode != 0


def test_every_alert_is_tested_and_named_in_the_on_call_page() -> None:
    groups = _rules(render(ON))["groups"]
    named = {r["alert"] for g in groups for r in g["rules"]}
    assert named == ALERTS
    tested = set(re.findall(r"alertname: (\w+)", CASES.read_text(encoding="utf-8")))
    assert tested == ALERTS
    page = (REPO_ROOT / "docs" / "operating.md").read_text(encoding="utf-8")
    assert all(alert in page for alert in ALERTS)


def _served() -> set[str]:
    """Every series name the product serves, as docs/metrics.md lists them (histograms with
    their parts)."""
    text = (REPO_ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    names = set(re.findall(r"^\| `(gitops_reverser_\w+)` \| (\w+)", text, re.M))
    served = {name for name, _ in names}
    for name, kind in names:
        if kind == "histogram":
            served |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return served


def _series_in(expr: str) -> set[str]:
    return set(re.findall(r"\bgitops_reverser_\w+", expr))


def test_the_alerts_and_the_dashboard_use_only_served_series() -> None:
    served = _served()
    assert "gitops_reverser_gittarget_oldest_unpushed_write_seconds" in served
    rules = _rules(render(ON))
    used = {s for g in rules["groups"] for r in g["rules"] for s in _series_in(r["expr"])}
    assert used and used <= served, used - served

    found = render({"grafanaDashboard": {"enabled": True}})
    (board,) = [o for o in found.of_kind("ConfigMap") if "gitops-reverser.json" in o["data"]]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(board["data"]["gitops-reverser.json"])
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = set().union(*(_series_in(e) for e in exprs))
    assert used <= served, used - served
    assert "gitops_reverser_gittarget_ready" in used


def test_both_are_off_by_default() -> None:
    found = render()
    assert found.of_kind("PrometheusRule") == []
    assert not [o for o in found.of_kind("ConfigMap") if "gitops-reverser.json" in o["data"]]
