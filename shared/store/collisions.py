"""The latest apply-window collisions of a branch (W3), for ``branch_worker inspect``.

The counter ``apply_window_collisions_total`` says how many; this list says which: the object,
the GitTarget, the applier, the verdict and why, newest first. It is capped and expires a day
after the last collision, so it needs no cleanup when the branch is retired.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys

#: How many collisions a branch keeps for inspection: enough to see a pattern, never a log.
KEEP = 20
#: A branch's list goes a day after its last collision.
TTL_S = 86_400


@dataclass(frozen=True, slots=True)
class Collision:
    """One event the apply window judged a collision (withheld, ambiguous or historical)."""

    at: float
    outcome: str  # "withheld" | "historical" | "ambiguous"
    object: str  # Kind/namespace/name
    gittarget: str  # namespace/name
    applier: str  # Kind/namespace/name
    why: str

    def to_json(self) -> str:
        """The JSON the list holds (sorted keys)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Collision:
        """The inverse of ``to_json``; ValueError for anything else."""
        try:
            data = json.loads(text)
            return cls(
                float(data["at"]),
                str(data["outcome"]),
                str(data["object"]),
                str(data["gittarget"]),
                str(data["applier"]),
                str(data["why"]),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"malformed collision: {err!r}") from err


class Collisions:
    """Record and read a branch's latest collisions."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def record(self, bk: BranchKey, collision: Collision) -> None:
        """Keep ``collision`` as the newest of the branch's ``KEEP``."""
        key = self._keys.branch_collisions(bk)
        pipe = self._r.pipeline(transaction=True)
        pipe.lpush(key, collision.to_json())
        pipe.ltrim(key, 0, KEEP - 1)
        pipe.expire(key, TTL_S)
        pipe.execute()

    def latest(self, bk: BranchKey) -> list[Collision]:
        """The branch's kept collisions, newest first (malformed entries skipped)."""
        found: list[Collision] = []
        for text in self._r.lrange(self._keys.branch_collisions(bk), 0, -1):
            try:
                found.append(Collision.from_json(str(text)))
            except ValueError:
                continue
        return found
