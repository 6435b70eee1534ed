"""O3: ``python -m services.branch_worker inspect`` prints what each applier is owed and why
it waits, from the state in Redis."""

from __future__ import annotations

import dataclasses

import pytest

from shared.model.config import ApplierRef
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", "flux-system", "apps", "default")  # quietPeriod 30s


def test_inspect_names_the_debt_and_the_reason_to_wait(rig: Rig) -> None:
    rig.target = dataclasses.replace(rig.target, applier=KS)
    rig.configs.publish_target(rig.target)
    loop = rig.loop()
    rig.publish("app", "CREATE")
    rig.drain(loop)  # a window is open: the ForeignCommit waits for quiet
    foreign = rig.foreign_push()
    loop.check_tip()
    out = rig.inspect()
    assert f"branch {rig.bk}: {rig.branch.url} main" in out
    assert "busy: 1 window(s) open, 1 write(s) pending" in out
    assert "applier Kustomization flux-system/apps (cluster default)" in out
    assert f"owed: ForeignCommit at {foreign[:12]}" in out
    assert "next: wait: the branch is busy" in out
