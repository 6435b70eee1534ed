"""U3: a branch's state keeps no field for a worker with nothing pending (worker ids change on
every rollout, so zeroed fields would pile up)."""

from __future__ import annotations

import pytest

from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _pending_fields(rig: Rig) -> list[str]:
    fields = rig.client.hkeys(rig.keys.branch_state(rig.bk))
    return sorted(str(f) for f in fields if str(f).startswith("pending:"))  # type: ignore[union-attr]


def test_no_pending_field_outlives_its_worker(rig: Rig) -> None:
    """Fails before U3: ``pending:w1`` stayed at 0 after the takeover, and ``pending:w2`` at
    0 after its push."""
    first = rig.loop("w1")
    rig.publish("app", "CREATE")
    rig.drain(first)
    assert _pending_fields(rig) == ["pending:w1"]
    rig.client.delete(rig.keys.branch_lease(rig.bk))  # w1's lease ran out
    second = rig.loop("w2")  # takes over and claims w1's event
    assert rig.states.read(rig.bk).pending == {"w2": 1}
    rig.clock.now += 10
    second.flush()
    assert rig.commits()[0] == "[CREATE] v1/configmaps/app"
    assert _pending_fields(rig) == [], "nothing pending: no field left"
    assert rig.states.read(rig.bk).pending_total == 0
