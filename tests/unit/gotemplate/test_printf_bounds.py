"""printf applies its verb to each element of a list, map or struct, as Go's does (``%03d`` of
``[1 2]`` is ``[001 002]``): a width then counts once per element, so a short list can ask for
far more text than its own length. The value is still built piece by piece inside its bound
(N3): refused before it passes MAX_VALUE characters, with a small peak."""

from __future__ import annotations

import tracemalloc

import pytest

from shared.gotemplate import MAX_VALUE, Record, TemplateError, parse


def test_a_width_on_each_element_is_bounded_by_the_value_limit() -> None:
    data = Record(L=list(range(2000)))  # about 9,000 characters shown; 2,000,000 padded
    tracemalloc.start()
    try:
        with pytest.raises(TemplateError, match=f"over {MAX_VALUE} characters"):
            parse('{{printf "%1000d" .L}}').render(data, 100)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"peaked at {peak} bytes"


def test_each_element_gets_the_verb_and_width() -> None:
    data = Record(L=[1, "a", None], M={"k": 2})
    assert parse('{{printf "%03d|%-3v|%d" .L .L .M}}').render(data, 100) == (
        "[001 %!d(string=a) <nil>]|[1   a   <nil>]|map[%!d(string=k):2]"
    )
