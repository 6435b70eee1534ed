"""The push notice's one codec (R4, Q5): what the receiver writes is what the worker reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared.model.ids import Branch
from shared.model.notices import PushNotice

URL = "https://git.example.com/team/apps.git"
NOTICE = PushNotice("team/gp", URL, "refs/heads/main", "b" * 40, "d-9", 1700000000.25)


def test_the_wire_names_are_the_ones_stored_since_the_first_receiver() -> None:
    """Renaming a field would leave every notice already in a stream unreadable."""
    assert NOTICE.to_fields() == {
        "provider": "team/gp",
        "url": URL,
        "ref": "refs/heads/main",
        "after": "b" * 40,
        "delivery": "d-9",
        "received_at": "1700000000.25",
    }


@given(
    provider=st.text(),
    branch=st.text(min_size=1),
    after=st.text(),
    delivery=st.text(),
    received_at=st.floats(allow_nan=False, allow_infinity=False),
)
def test_a_notice_reads_back_equal_to_what_was_written(
    provider: str, branch: str, after: str, delivery: str, received_at: float
) -> None:
    notice = PushNotice(provider, URL, f"refs/heads/{branch}", after, delivery, received_at)
    assert PushNotice.from_fields(notice.to_fields()) == notice


def test_the_branch_and_its_stream_come_from_the_ref() -> None:
    assert NOTICE.branch == "main"
    assert NOTICE.target == Branch(URL, "main")


def test_a_damaged_hint_still_reads() -> None:
    """A notice only makes the owner read the tip sooner, so a bad one must not stop it."""
    read = PushNotice.from_fields({"after": "c" * 40, "received_at": "yesterday"})
    assert read == PushNotice("", "", "", "c" * 40, "", 0.0)
