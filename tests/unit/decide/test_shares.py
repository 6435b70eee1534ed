"""Q1: a worker takes its fair share of the branches, capped by what it can serve."""

from __future__ import annotations

import pytest

from shared.decide.shares import excess, fair_share, room_for


@pytest.mark.parametrize(
    ("branches", "alive", "capacity", "share"),
    [
        (20, 2, 100, 10),  # split evenly
        (21, 2, 100, 11),  # rounded up, so no branch is left without an owner
        (20, 1, 100, 20),  # a lone survivor takes everything it can serve
        (500, 1, 100, 100),  # ... but no more than its capacity: the rest wait for siblings
        (5, 0, 100, 5),  # before the first heartbeat counts, the worker counts itself
        (0, 3, 100, 0),
    ],
)
def test_fair_share_is_capped_by_capacity(
    branches: int, alive: int, capacity: int, share: int
) -> None:
    assert fair_share(branches, alive, capacity) == share


def test_room_is_what_the_share_leaves_and_never_negative() -> None:
    assert room_for(20, 2, 100, held=7) == 3
    assert room_for(20, 4, 100, held=10) == 0, "a worker over its share takes nothing more"
    assert room_for(20, 1, 4, held=4) == 0


def test_a_worker_over_its_share_gives_the_excess_back() -> None:
    assert excess(20, 2, 100, held=20) == 10, "the first worker took all; a sibling joined"
    assert excess(20, 2, 100, held=10) == 0
    assert excess(20, 1, 4, held=6) == 2, "capacity lowered"
