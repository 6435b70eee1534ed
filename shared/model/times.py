"""Times as Kubernetes writes them: RFC 3339 in UTC at one-second granularity.

Every time the product puts into an object (condition transitions, Event timestamps,
``status.applier.lastRequest``) is formatted here, so that two writers can never disagree on
the format. Pure: it formats the time it is given and never reads a clock, which is why the
decision layer may use it too.
"""

from __future__ import annotations

from datetime import UTC, datetime

#: metav1.Time's wire format: no fraction, ``Z`` for UTC.
_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(at: float) -> str:
    """``at`` (seconds since the epoch) as metav1.Time serialises it; fractions are dropped."""
    return datetime.fromtimestamp(int(at), tz=UTC).strftime(_FORMAT)


def parse_rfc3339(text: str) -> float | None:
    """The inverse of ``rfc3339`` (any RFC 3339 time the API stores); None when unreadable."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
