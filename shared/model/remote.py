"""A branch's commit on the remote as its owner last verified it (P10).

The branch's owner knows the remote's commit at two moments: its own push was accepted at it
(``Push``), or it read it from the remote's ref advertisement (``Fetch``, the steady tick or a
notice). It publishes the latest with the branch's state; the watcher shows it on each
GitTarget of the branch as ``status.remote``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from shared.model.times import rfc3339

VerifiedBy = Literal["Push", "Fetch"]


@dataclass(frozen=True, slots=True)
class RemoteVerified:
    """The remote branch pointed at ``revision`` at ``at``, as ``by`` showed."""

    revision: str
    at: float
    by: VerifiedBy

    def to_status(self) -> dict[str, Any]:
        """``status.remote`` as the CRD spells it."""
        return {
            "revision": self.revision,
            "lastVerifiedAt": rfc3339(self.at),
            "verifiedBy": self.by,
        }

    def to_json(self) -> str:
        """Compact JSON for a hash field."""
        return json.dumps([self.revision, self.at, self.by])

    @classmethod
    def from_json(cls, text: str) -> RemoteVerified | None:
        """The inverse of ``to_json``; None for a value that is not one."""
        try:
            revision, at, by = json.loads(text)
        except (ValueError, TypeError):
            return None
        if by not in ("Push", "Fetch") or not isinstance(revision, str):
            return None
        return cls(revision, float(at), by)
