"""When ``GitTarget.status.remote`` is written (P10).

The owner verifies its branch's remote commit on every push and every read of the tip (an idle
branch reads it each steady tick, Q7). Writing every verification to every GitTarget of the
branch would cost the API server a write per GitTarget per minute for nothing a person reads,
so status follows the verification when the revision or how it was verified changed, and
otherwise refreshes ``lastVerifiedAt`` only once it is ``REFRESH_S`` behind: status.remote is
at most that stale while nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.model.remote import RemoteVerified
from shared.model.times import parse_rfc3339

#: How far behind the latest verification ``lastVerifiedAt`` may be before it is rewritten.
REFRESH_S = 300.0


def remote_status(
    verified: RemoteVerified | None, stored: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``status.remote`` to write, or None when status should stay as it is."""
    if verified is None:
        return None
    wanted = verified.to_status()
    if stored is None:
        return wanted
    if (stored.get("revision"), stored.get("verifiedBy")) != (verified.revision, verified.by):
        return wanted
    shown = parse_rfc3339(str(stored.get("lastVerifiedAt") or ""))
    if shown is None or verified.at - shown >= REFRESH_S:
        return wanted
    return None
