"""``make demo`` tells both stories to the end (issue 10 section 4: the Argo CD story beside
the Flux one).

The demo runs as a user runs it (``python -m sandbox demo``, every process of the Procfile,
the sandbox's Flux and Argo CD doubles) on the tests' Redis; its output is the story, so the
test reads the story: each step happened, and what it names agrees with itself (the operation
the product set on the Application is pinned to the commit the outside push made).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from sandbox.paths import REPO_ROOT

pytestmark = pytest.mark.e2e

#: Both stories take about 25s on an idle machine; far more on a busy one.
DEMO_TIMEOUT_S = 300


def _line(story: str, pattern: str) -> re.Match[str]:
    found = re.search(pattern, story, re.MULTILINE)
    assert found, f"no line matching {pattern!r} in:\n{story}"
    return found


def test_make_demo_tells_the_flux_and_the_argocd_story(
    tmp_path: Path, e2e_redis: redis.Redis
) -> None:
    assert e2e_redis.ping()
    run = subprocess.run(
        [sys.executable, "-m", "sandbox", "demo", "--dir", str(tmp_path / "demo")],
        cwd=REPO_ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # Issue 13 part 4: the demo ends quietly; the sandbox's doubles no longer fail (and print
    # connection errors) under a server stopped before them, and no process printed a traceback.
    assert "Traceback" not in run.stdout + run.stderr
    assert not re.search(r"failed|[Ee]rror", run.stderr), run.stderr
    for log in (tmp_path / "demo" / "logs").glob("*.log"):
        assert "Traceback" not in log.read_text(), log
    flux, _, argo = run.stdout.partition("--- Argo CD story")
    assert "--- Flux story" in flux and argo, run.stdout
    _line(flux, r"CatchUp: after a quiet period of 3s Flux was asked, and applied \w{12} \(True\)")
    _line(flux, r"lastRequest: reasons=\['ForeignCommit'\] outcome=Delivered")
    edit = _line(argo, r"committed and pushed (\w{12}): \[CREATE\] v1/configmaps/hello")[1]
    _line(argo, r"no sync: .* \(operation set now: False\)")
    outside = _line(argo, r"Outside push: someone pushes (\w{12})")[1]
    revision = _line(argo, r"operation\.sync\.revision: (\w{40})$")[1]
    assert revision.startswith(outside)
    _line(argo, r"operation\.initiatedBy: +\{'username': 'gitops-reverser', 'automated': True\}")
    _line(argo, rf"operationState\.phase: Succeeded \(syncResult\.revision {outside}\)")
    _line(argo, r"configmap from-git is in the cluster: \{'greeting': 'hello from Git'\}")
    _line(argo, rf"Event ApplyRequested on GitTarget apps: ForeignCommit at {outside}")
    _line(argo, r"lastRequest: reasons=\['ForeignCommit'\] outcome=Delivered")
    # the first start's sync of the tip it found (the Application had never synced, issue 23
    # issue 23), then the outside push's
    _line(argo, rf"status\.history \(every sync Argo CD ran\): \[(?:'\w{{12}}', )?'{outside}'\]")
    assert edit != outside
    _line(run.stdout, r"^demo \| done\.")
