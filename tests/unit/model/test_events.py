"""Object events survive the stream codec, and a malformed entry is refused, not guessed."""

from __future__ import annotations

import pytest

from shared.model.events import ManagerEntry, ObjectEvent, latest_managers
from tests.suites.store_suite import _event


def test_codec_round_trip() -> None:
    event = _event("a")
    assert ObjectEvent.from_fields(event.to_fields()) == event


@pytest.mark.parametrize("broken", [{}, {"op": "MOVE"}, {"target": "not json"}])
def test_malformed_entries_raise_value_error(broken: dict[str, str]) -> None:
    fields = {**_event("a").to_fields(), **broken}
    if not broken:
        fields.pop("uid")
    with pytest.raises(ValueError, match=r"malformed object event|unknown operation"):
        ObjectEvent.from_fields(fields)


def test_latest_managers_keeps_every_entry_of_the_newest_second() -> None:
    managed = [
        {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-29T10:00:00Z"},
        {"manager": "kustomize-controller", "operation": "Apply", "time": "2026-11-29T10:00:05Z"},
        {"manager": "other", "operation": "Update", "time": "2026-11-29T10:00:05Z"},
    ]
    assert latest_managers(managed) == (
        ManagerEntry("kustomize-controller", "Apply", "2026-11-29T10:00:05Z"),
        ManagerEntry("other", "Update", "2026-11-29T10:00:05Z"),
    )
    assert latest_managers(None) == ()
