"""Go-style durations (``5s``, ``1m30s``, ``250ms``), as the CRDs and settings spell them.

Kubernetes and Flux users write durations the Go way; parsing them in one place keeps the CRDs,
the settings and the decisions in agreement about what ``30s`` means.
"""

from __future__ import annotations

import re
from datetime import timedelta

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$")


class DurationError(ValueError):
    """A duration string that Go's ``time.ParseDuration`` would also refuse."""


def parse_duration(text: str) -> timedelta:
    """Parse ``text`` as a non-negative Go duration; ``0`` alone is allowed, as in Go."""
    value = text.strip()
    if value == "0":
        return timedelta(0)
    if not _WHOLE.match(value):
        raise DurationError(f"invalid duration {text!r}: expected e.g. 5s, 1m30s, 250ms")
    seconds = sum(float(num) * _UNIT_SECONDS[unit] for num, unit in _PART.findall(value))
    return timedelta(seconds=seconds)
