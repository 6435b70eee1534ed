"""Times as the product writes them into objects: RFC 3339, UTC, whole seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from shared.model.times import rfc3339

T0 = 1_900_000_000.0


def test_a_time_is_written_in_utc_without_a_fraction() -> None:
    """metav1.Time drops fractions and writes ``Z``; the fraction never rounds up."""
    assert rfc3339(T0) == "2030-03-17T17:46:40Z"
    assert rfc3339(T0 + 0.999) == "2030-03-17T17:46:40Z"
    assert rfc3339(0) == "1970-01-01T00:00:00Z"


@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))
def test_the_written_time_reads_back_as_the_whole_second(at: float) -> None:
    written = rfc3339(at)
    parsed = datetime.strptime(written, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert parsed.timestamp() == int(at)
