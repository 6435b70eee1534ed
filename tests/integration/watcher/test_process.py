"""``python -m services.watcher`` as the Procfile starts it: configured by the environment,
``--burst`` exits by itself, and SIGTERM ends the process cleanly (architecture.md,
"Every process: Settings from the environment, SIGTERM = finish the current unit of work and
exit"; conventions.md 10)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import process_env
from tests.integration.watcher.harness import Rig, mirror_setup

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]
#: Bounds for a process we started; each wait ends as soon as its condition holds.
EXIT_WAIT_S = 30.0
EVENT_WAIT_S = 20.0


def _environment(rig: Rig, kubeconfig: Path) -> dict[str, str]:
    env = process_env(rig.prefix, kubeconfig=str(kubeconfig), reconcile_period="1s")
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_burst_run_publishes_and_exits(rig: Rig, repo_url: str, tmp_path: Path) -> None:
    """``--burst``: one pass, watches drained, exit status 0, events on the stream."""
    mirror_setup(rig, repo_url)
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    kubeconfig = tmp_path / "kubeconfig"
    rig.cluster.server.write_kubeconfig(kubeconfig)
    done = subprocess.run(
        [sys.executable, "-m", "services.watcher", "--burst"],
        cwd=ROOT,
        env=_environment(rig, kubeconfig),
        capture_output=True,
        text=True,
        timeout=EXIT_WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [(e.operation, e.object_id.name) for e in rig.events(repo_url)] == [("CREATE", "app")]


def test_sigterm_stops_a_running_watcher(rig: Rig, repo_url: str, tmp_path: Path) -> None:
    """The first SIGTERM finishes the event in hand, stops every watch and exits 0."""
    mirror_setup(rig, repo_url)
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    kubeconfig = tmp_path / "kubeconfig"
    rig.cluster.server.write_kubeconfig(kubeconfig)
    process = subprocess.Popen(
        [sys.executable, "-m", "services.watcher"],
        cwd=ROOT,
        env=_environment(rig, kubeconfig),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + EVENT_WAIT_S
        while not rig.events(repo_url) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[1]
            time.sleep(0.05)  # another process: its progress is visible only in Redis
        assert rig.events(repo_url), "the watcher published nothing"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=EXIT_WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert '"message":"signal 15: finishing the work in hand"' in stderr
