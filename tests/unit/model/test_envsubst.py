"""Flux's postBuild substitution as the render-fidelity gate computes it (shared.model.envsubst):
the three forms it renders, everything else refused, and the ``$$`` round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.model.envsubst import Unsupported, escape, substitute, variables

VALUES = {"REPLICAS": "3", "TAG": "1.2", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("${REPLICAS}", "3"),
        ("repo/app:${TAG}-${REPLICAS}", "repo/app:1.2-3"),
        ("${MISSING:=fallback}", "fallback"),
        ("${EMPTY:=fallback}", "fallback"),
        ("${TAG:=fallback}", "1.2"),
        ("${MISSING:=}", ""),
        ("${EMPTY}", ""),
        ("cost $$5", "cost $5"),
        ("$${REPLICAS}", "${REPLICAS}"),
        ("no dollar at all", "no dollar at all"),
    ],
)
def test_the_three_forms_render(text: str, rendered: str) -> None:
    assert substitute(text, VALUES) == rendered


@pytest.mark.parametrize(
    "text",
    [
        "${MISSING}",  # not set, no default: strict or empty, not known here
        "$HOME",  # no braces
        "${REPLICAS:-2}",  # another operator
        "${REPLICAS/3/4}",
        "${#TAG}",
        "${1abc}",
        "trailing $",
        "${MISSING:=a${B}}",  # nested
    ],
)
def test_anything_else_is_unsupported(text: str) -> None:
    with pytest.raises(Unsupported):
        substitute(text, VALUES)


def test_variables_names_references_not_escapes() -> None:
    assert variables("${A} $${B} ${C:=x} $$") == ["A", "C"]


@given(st.text())
def test_an_escaped_text_renders_as_itself(text: str) -> None:
    assert substitute(escape(text), VALUES) == text


names = st.from_regex(r"[_a-zA-Z][_a-zA-Z0-9]{0,8}", fullmatch=True)
plain = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=12)


@given(st.lists(st.tuples(plain, names, plain), min_size=1, max_size=4), st.data())
def test_a_set_variable_renders_its_value_wherever_it_stands(
    parts: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    values = {name: data.draw(plain, label=name) for _, name, _ in parts}
    text = "".join(f"{escape(a)}${{{n}}}{escape(b)}" for a, n, b in parts)
    expected = "".join(f"{a}{values[n]}{b}" for a, n, b in parts)
    assert substitute(text, values) == expected
    assert variables(text) == [n for _, n, _ in parts]
