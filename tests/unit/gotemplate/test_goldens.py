"""The engine against Go's own ``text/template``: every case of ``corpus.json`` (a template
and the data it runs on) is run here and compared with what Go made of it, ``goldens.json``,
which ``scripts/regenerate-gotemplate-goldens`` writes with ``go run`` (CI needs no Go: it
compares with the committed goldens).

A case Go renders must render byte for byte the same here. A case Go refuses must fail here
too, with Go's words (after Go's ``template: t:1:2: executing "t" at <...>:`` prefix, and with
an anonymous struct's type standing for a record's name), unless the case says why the words
differ (``wording``). A case the subset refuses by design (``refused``: no template calls, no
``html``, a printf width over 1000, the bounds of N3) must fail here whatever Go made of it. A
case where the engine still differs from Go says so (``known_difference``) and must still
differ, so a fix removes the mark. Every mark carries its reason; no case is skipped."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from shared.gotemplate import GoMap, Record, TemplateError, parse

HERE = Path(__file__).parent
CORPUS = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))
GOLDENS = {g["name"]: g for g in json.loads((HERE / "goldens.json").read_text("utf-8"))["cases"]}
CASES = CORPUS["cases"]
MARKS = ("refused", "known_difference", "wording")
LIMIT = 10**6


def _value(raw: Any) -> object:
    """A corpus value as the engine's data: ``$struct`` a Record, ``$map`` a GoMap (whose zero
    is its element type's), any other object a plain map; as main.go reads it for Go."""
    if isinstance(raw, list):
        return [_value(item) for item in raw]
    if not isinstance(raw, dict):
        return raw
    if "$struct" in raw:
        record = Record((name, _value(item)) for name, item in raw["fields"])
        record.type_name = raw["$struct"]
        return record
    if "$map" in raw:
        typed = GoMap(raw["$map"])
        typed.zero = {"int": 0, "string": ""}[raw["$elem"]]
        return typed
    return {key: _value(item) for key, item in raw.items()}


DATA = {name: _value(raw) for name, raw in CORPUS["data"].items()}
RECORD_TYPES = sorted(set(re.findall(r'"\$struct": "(\w+)"', json.dumps(CORPUS["data"]))))


def _run(case: dict[str, Any]) -> tuple[str, str]:
    """("output", text) or ("error", message) from this engine."""
    try:
        return "output", parse(case["template"]).render(DATA.get(case.get("data", "")), LIMIT)
    except TemplateError as err:
        return "error", str(err)


def _same_output(golden: dict[str, Any], text: str) -> bool:
    if "output" in golden:
        return bool(golden["output"] == text)
    data = text.encode()
    return len(data) == golden["output_len"] and (
        hashlib.sha256(data).hexdigest() == golden["output_sha256"]
    )


def go_words(error: str) -> str:
    """Go's error without its position and ``executing`` prefix; an anonymous struct type (the
    corpus's records are built by reflection) reads ``STRUCT``."""
    text = re.sub(r"^template: t:\d+(?::\d+)?: ", "", error)
    text = re.sub(r'^executing "t" at <.*?>: ', "", text)
    text = re.sub(r"^error calling \w+: ", "", text)
    return re.sub(r"struct \{.*\}", "STRUCT", text)


def our_words(error: str) -> str:
    """Ours with a record's type name read as ``STRUCT``."""
    return re.sub(rf"type ({'|'.join(RECORD_TYPES)})\b", "type STRUCT", error)


def same_words(go: str, ours: str) -> bool:
    """Ours says what Go says (it may add to it: the functions there are, the block unclosed)."""
    return our_words(ours).startswith(go_words(go))


def test_every_case_has_a_golden_and_every_mark_a_reason() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) >= 150
    assert set(names) == set(GOLDENS), "regenerate: scripts/regenerate-gotemplate-goldens"
    for case in CASES:
        marks = [mark for mark in MARKS if mark in case]
        assert len(marks) <= 1, case["name"]
        assert all(isinstance(case[m], str) and len(case[m]) > 10 for m in marks), case["name"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_the_engine_does_what_go_does(case: dict[str, Any]) -> None:
    golden = GOLDENS[case["name"]]
    kind, ours = _run(case)
    if "refused" in case:
        assert kind == "error", f"refused by design ({case['refused']}), but rendered {ours!r}"
        return
    if "known_difference" in case:
        same = (kind == "output" and "error" not in golden and _same_output(golden, ours)) or (
            kind == "error" and "error" in golden
        )
        assert not same, "no longer differs from Go: remove its known_difference mark"
        return
    if "error" not in golden:
        assert kind == "output", f"Go rendered it; ours failed: {ours}"
        assert _same_output(golden, ours), f"Go: {golden.get('output')!r}, ours: {ours!r}"
        return
    assert kind == "error", f"Go failed ({golden['error']}); ours rendered {ours!r}"
    if "wording" in case:
        assert not same_words(golden["error"], ours), "same words as Go: remove its mark"
    else:
        assert same_words(golden["error"], ours), f"Go: {golden['error']!r}, ours: {ours!r}"
