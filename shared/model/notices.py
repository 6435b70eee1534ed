"""Push notices: a verified webhook delivery reduced to a hint for one branch (R4).

A notice never says what the tip is; it only makes the branch's owner read the tip sooner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Notice:
    """One push notice as the branch worker reads it."""

    entry_id: str
    provider: str
    ref: str
    after: str
    delivery: str
    received_at: float

    @classmethod
    def from_fields(cls, entry_id: str, fields: Mapping[str, str]) -> Notice:
        """Read a notice from its stream fields (tolerant: a hint may lack some of them)."""
        received = fields.get("received_at") or fields.get("at") or "0"
        try:
            at = float(received)
        except ValueError:
            at = 0.0
        return cls(
            entry_id=entry_id,
            provider=fields.get("provider", ""),
            ref=fields.get("ref", ""),
            after=fields.get("after", ""),
            delivery=fields.get("delivery", fields.get("delivery_id", "")),
            received_at=at,
        )
