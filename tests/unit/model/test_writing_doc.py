"""docs/writing.md's in-place edit example is what the writer does (P1, M5): the ``before``
file, edited to the API object the page describes, gives exactly the ``after`` file."""

from __future__ import annotations

import re
from pathlib import Path

from shared.model.manifest import parse
from shared.model.roundtrip import edit_file

PAGE = Path(__file__).resolve().parents[3] / "docs" / "writing.md"


def _example(name: str) -> str:
    pattern = rf"<!-- writing-example: {name} -->\n```yaml\n(.*?)```"
    match = re.search(pattern, PAGE.read_text(), re.S)
    assert match is not None, f"docs/writing.md lost its {name!r} example"
    return match.group(1)


def test_the_pages_example_is_what_an_update_writes() -> None:
    before, after = _example("before"), _example("after")
    documents = parse(before.encode())
    api = documents[0] | {"data": {"flag": "on", "level": "info", "mode": "slow"}}  # sorted
    assert edit_file(before.encode(), documents, 0, api) == after.encode()
