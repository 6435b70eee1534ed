"""A commit-message template that doubles a string (the 2026-12-06 probe, N3) against the
watcher process as the Procfile starts it: the GitProvider that holds it is refused
(``Ready=False CommitConfigInvalid``, naming the bound), the process stays up and small, and
it goes on publishing another tenant's config and edits.

Before: the check ran the template, which built a string of 128 Mi characters; the watcher's
peak memory went from 79 MB to 373 MB, and the GitProvider was Ready (24 doublings; each more
doubles it again, so a longer template killed the one watcher of the whole cluster).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.integration.watcher.harness import Rig, git_provider, mirror_setup
from tests.integration.watcher.test_process import EVENT_WAIT_S, EXIT_WAIT_S, ROOT, _environment

pytestmark = pytest.mark.integration

BOMB = '{{$x := "aaaaaaaa"}}' + "{{$x = print $x $x}}" * 24 + "{{len $x}}"  # 510 characters
#: The watcher's peak resident memory may not pass this (it is about 80 MB; the bomb took it
#: to 373 MB).
PEAK_KB = 200_000


def _peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc")


def test_the_watcher_refuses_a_doubling_template_and_serves_the_other_tenants(
    rig: Rig, repo_url: str, tmp_path: Path
) -> None:
    c = rig.cluster
    mirror_setup(rig, repo_url, ns="team-b")
    c.configmap("team-b", "before", {"v": "1"})
    c.namespace("team-a")
    c.create(
        git_provider("team-a", repo_url, name="bomb", commit={"message": {"eventTemplate": BOMB}})
    )
    kubeconfig = tmp_path / "kubeconfig"
    c.server.write_kubeconfig(kubeconfig)
    process = subprocess.Popen(
        [sys.executable, "-m", "services.watcher"],
        cwd=ROOT,
        env=_environment(rig, kubeconfig),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def names() -> list[str]:
        assert process.poll() is None, process.communicate()[1]
        return [e.object_id.name for e in rig.events(repo_url)]

    def refused() -> bool:
        ready = c.conditions("GitProvider", "bomb", "team-a").get("Ready", {})
        return ready.get("reason") == "CommitConfigInvalid"

    try:
        wait_until(refused, EVENT_WAIT_S, "the bomb's GitProvider refused", poll=0.2)
        wait_until(lambda: "before" in names(), EVENT_WAIT_S, "team-b's first edit published")
        c.configmap("team-b", "after", {"v": "2"})  # passes go on after the refusal
        wait_until(lambda: "after" in names(), EVENT_WAIT_S, "team-b's later edit published")
        peak = _peak_kb(process.pid)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=EXIT_WAIT_S)
    ready = c.conditions("GitProvider", "bomb", "team-a")["Ready"]
    assert ready["status"] == "False"
    assert "eventTemplate" in ready["message"]
    assert "over 65536 characters" in ready["message"], ready["message"]
    assert peak < PEAK_KB, f"the watcher's peak resident memory was {peak} kB"
    assert process.returncode == 0, stderr
