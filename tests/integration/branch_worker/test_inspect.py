"""O3: ``python -m services.branch_worker inspect`` prints what each applier is owed and why
it waits, from the state in Redis."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from shared.model.config import ApplierRef
from shared.settings import Settings
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")  # quietPeriod 30s


def test_inspect_names_the_debt_and_the_reason_to_wait(rig: Rig, key_prefix: str) -> None:
    rig.target = dataclasses.replace(rig.target, applier=KS)
    rig.configs.publish_target(rig.target)
    loop = rig.loop()
    rig.foreign_push()
    loop.check_tip()
    rig.publish("app", "CREATE")
    rig.drain(loop)  # a window is open: the ForeignCommit waits for quiet
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    env.update(
        {
            "GITOPS_REVERSER_REDIS_URL": Settings.from_env().redis_url,
            "GITOPS_REVERSER_KEY_PREFIX": key_prefix,
        }
    )
    done = subprocess.run(
        [sys.executable, "-m", "services.branch_worker", "inspect"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    out = done.stdout
    assert f"branch {rig.bk}: {rig.branch.url} main" in out
    assert "busy: 1 window(s) open, 1 write(s) pending" in out
    assert "applier Kustomization flux-system/apps (cluster default)" in out
    assert f"owed: ForeignCommit at {loop.tip[:12] if loop.tip else ''}" in out
    assert "next: wait: the branch is busy" in out
