"""How many branches a branch worker may take now (Q1).

Live workers share the branches: each takes at most its fair share (the branches divided by
the live workers, rounded up, so twenty branches and two workers make ten each), and never more
than it can serve (``Settings.max_branches``), so that a lone worker under a flood of branches
leaves the rest to siblings that start later instead of serving every branch slowly. A worker
that holds more than its share (it started first and took everything, or a sibling joined)
gives the excess back, so the branches spread over the workers once they are all alive.
"""

from __future__ import annotations

import math


def fair_share(branches: int, alive: int, capacity: int) -> int:
    """The most branches one of ``alive`` workers should own (a dead count reads as one)."""
    return min(math.ceil(branches / max(alive, 1)), capacity)


def room_for(branches: int, alive: int, capacity: int, held: int) -> int:
    """How many more branches a worker holding ``held`` may take now (never negative)."""
    return max(fair_share(branches, alive, capacity) - held, 0)


def excess(branches: int, alive: int, capacity: int, held: int) -> int:
    """How many branches a worker holding ``held`` should give back to its siblings."""
    return max(held - fair_share(branches, alive, capacity), 0)
