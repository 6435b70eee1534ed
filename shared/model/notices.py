"""Push notices: a verified webhook delivery reduced to a hint for one branch (R4, Q5).

A notice never says what the tip is; it only makes the branch's owner read the tip sooner. The
receiver writes it to the branch's notice stream and the branch worker reads it back, both
through ``PushNotice``'s one codec, so the two sides cannot drift apart on a field name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.model.ids import Branch

#: The prefix of a branch's full ref name; a notice is only ever about a branch.
HEADS = "refs/heads/"


@dataclass(frozen=True, slots=True)
class PushNotice:
    """One hint for one branch: a verified delivery said this ref moved (R4).

    Every field is stored, so a notice reads back equal to what was written. What the stream
    already says (which branch it belongs to) and what no reader needs (the receiver type) is
    not part of the record.
    """

    provider: str  # the GitProvider, ``namespace/name``
    url: str  # the GitProvider's spec.url (the branch key is built from it)
    ref: str  # ``refs/heads/<branch>``
    after: str  # what the delivery claims; a hint only, the tip comes from ls-remote (Q5)
    delivery: str  # the host's delivery id ("" when it sends none)
    received_at: float

    @property
    def branch(self) -> str:
        """The branch name the ref points at."""
        return self.ref.removeprefix(HEADS)

    @property
    def target(self) -> Branch:
        """The branch whose notice stream this goes to."""
        return Branch(self.url, self.branch)

    def to_fields(self) -> dict[str, str]:
        """Stream fields. The names are the ones stored since the first receiver, so notices
        written by an older receiver still read."""
        return {
            "provider": self.provider,
            "url": self.url,
            "ref": self.ref,
            "after": self.after,
            "delivery": self.delivery,
            "received_at": repr(self.received_at),
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> PushNotice:
        """The inverse of ``to_fields``. Tolerant, because a notice is only a hint: a missing
        field reads as empty and an unreadable time as 0, and the owner reads the tip anyway."""
        return cls(
            provider=fields.get("provider", ""),
            url=fields.get("url", ""),
            ref=fields.get("ref", ""),
            after=fields.get("after", ""),
            delivery=fields.get("delivery", ""),
            received_at=_seconds(fields.get("received_at", "")),
        )


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0
