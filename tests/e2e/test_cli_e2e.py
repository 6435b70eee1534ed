"""``gitops-reverser`` as a person runs it, against every process running on the sandbox.

The console scripts installed by pyproject.toml (``gitops-reverser`` and the kubectl plugin
name ``kubectl-gitops_reverser``) run as their own processes, with the sandbox's kubeconfig
and the system's Redis URL and key prefix as flags, none of the processes' environment. An
API edit waits in a ten-minute window until ``commit --wait`` closes it and prints the sha
the branch worker pushed; ``trace`` then names that commit as the one that wrote the object,
``get targets`` shows the push, and ``inspect`` prints the branch worker's report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client

from tests.e2e.conftest import CONFIGMAPS, WAIT_S, Launcher, Tenants
from tests.e2e.system import System
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

NS = "cli"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def system(launcher: Launcher) -> System:
    return launcher.start(reconcile_period="1s", steady_tick="1s", max_window="10m")


def run(
    system: System, *args: str, command: str = "gitops-reverser"
) -> subprocess.CompletedProcess[str]:
    """One run of the console script, as a shell runs it (no GITOPS_REVERSER_* settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    flags = [
        "--kubeconfig",
        str(system.directory / "kubeconfig"),
        "--redis-url",
        system.env["GITOPS_REVERSER_REDIS_URL"],
        "--key-prefix",
        system.env["GITOPS_REVERSER_KEY_PREFIX"],
    ]
    return subprocess.run(
        [str(BIN / command), *args, *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S + 60,
        check=False,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_commit_trace_get_and_inspect_through_the_console_script(
    system: System, e2e_redis: redis.Redis
) -> None:
    tenant = Tenants(system, e2e_redis).make(NS, commit_window="10m", rules=[CONFIGMAPS])
    tenant.wait_condition("Ready", "True")
    tenant.wait_watching("/configmaps")
    tenant.wait_owned()
    base = tenant.tip()
    system.core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="hello"), data={"a": "1"})
    )
    wait_until(lambda: tenant.state().windows_open == 1, WAIT_S, "the edit's window opened")

    done = run(system, "commit", "target", "gt", "-n", NS, "-m", "hello, now", "--wait")
    assert done.returncode == 0, done.stderr
    sha = done.stdout.strip()
    assert tenant.commits_since(base) == [sha] and tenant.tip() == sha

    record = as_json(run(system, "trace", "configmap/hello", "-n", NS, "-o", "json"))
    [target] = record["gitTargets"]
    assert target["file"] == f"{tenant.path}/{NS}/configmaps/hello.yaml"
    assert target["lastCommit"]["sha"] == sha
    assert target["lastCommit"]["subject"] == "hello, now"

    [row] = as_json(run(system, "get", "targets", "-n", NS, "-o", "json"))["items"]
    assert (row["name"], row["ready"], row["owed"]) == ("gt", "True", "nothing")
    assert row["lastPush"] is not None and row["branch"]["tip"] == sha

    table = run(system, "get", "gittargets", "-n", NS, command="kubectl-gitops_reverser")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[1].split()[:3] == [NS, "gt", "True"]

    inspect = run(system, "inspect")
    assert inspect.returncode == 0, inspect.stderr
    assert f"branch {tenant.bk}: {tenant.url} main" in inspect.stdout
    assert f"tip {sha[:12]}" in inspect.stdout

    missing = run(system, "reconcile", "target", "nope", "-n", NS)
    assert missing.returncode == 3 and missing.stdout == ""
    assert 'GitTarget "nope" not found' in missing.stderr
