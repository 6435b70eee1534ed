"""M2: ``fast_render`` writes exactly the bytes of the reference render (``ordered_document``
then ``simple_dump``, which tests/unit/model/test_simple_yaml.py holds to ruamel's bytes), and
takes every object the reference's fast writer takes; anything else it declines, and
``manifest.render`` then takes the reference path."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.model.fast_render import _typed, fast_render
from shared.model.manifest import ordered_document, render, render_with_ruamel
from shared.model.simple_yaml import simple_dump, yaml11_typed
from tests.unit.model.test_simple_yaml import (
    AWKWARD,
    TYPICAL,
    _benign_keys,
    _benign_values,
    _keys,
    _values,
)


def _reference(obj: dict[str, Any]) -> tuple[bytes | None, bytes]:
    """The reference's fast writer's bytes (None when it declines) and ruamel's bytes."""
    document = ordered_document(obj)
    simple = simple_dump(document)
    return (simple.encode() if simple is not None else None), render_with_ruamel(document).encode()


def _same(obj: dict[str, Any], may_decline: bool = False) -> bool:
    """fast_render gives the reference's bytes, or declines exactly when the reference's fast
    writer does (``may_decline``: or declines a shape it leaves to the reference path);
    ``render`` (which tries it first) still gives ruamel's bytes. True when taken."""
    simple, ruamel = _reference(obj)
    fast = fast_render(obj)
    if not (may_decline and fast is None):
        assert fast == simple, (fast, simple)
    assert fast is None or fast == ruamel
    assert render(obj) == ruamel
    return fast is not None


def test_typical_objects_are_taken_and_written_byte_for_byte() -> None:
    for obj in TYPICAL:
        assert _same(obj), obj["kind"]


def test_awkward_strings_anywhere_are_written_alike_or_declined_alike() -> None:
    taken = 0
    for text in AWKWARD:
        for obj in (
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": text}},
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {text: "v"}},
            {"apiVersion": text, "kind": "ConfigMap"},
            {"apiVersion": "v1", "kind": "List", "items": [text, "b"]},
            {"apiVersion": "v1", "kind": "List", "items": [{"k": text, "n": 1}]},
            {"apiVersion": "v1", "kind": "A", "metadata": {"name": text, "labels": {text: text}}},
            {"kind": "A", text: {"z": 1, "a": [1, 2]}},
        ):
            taken += _same(obj)
    assert taken > len(AWKWARD), "the comparison is not vacuous"


def test_shapes_of_the_document_itself() -> None:
    """Head, metadata and the rest in ``ordered_document``'s order, whatever the input's."""
    for obj in (
        {"data": {"b": 1, "a": 2}, "kind": "ConfigMap", "apiVersion": "v1"},
        {"apiVersion": "v1", "kind": "X", "metadata": {}},
        {"apiVersion": "v1", "kind": "X", "metadata": {"uid": "1", "name": "n"}},
        {"apiVersion": "v1", "kind": "X", "metadata": None, "spec": {}},
        {"apiVersion": "v1", "kind": "X", "metadata": "odd", "spec": []},
        {"apiVersion": None, "kind": "X"},
        {"apiVersion": "v1", "kind": "X", "spec": {True: 1, 2: 3, "z": None}},
        {"apiVersion": "v1", "kind": "X", "spec": {"a": (1, 2)}},
        {"apiVersion": "v1", "kind": "X", "spec": {"a": 1.5}},
        {"apiVersion": "v1", "kind": "X", "spec": {"a": [[1]], "b": [None], "c": [{}]}},
        {"apiVersion": "v1", "kind": "X", "spec": {"a": [{"b": {"c": [1]}, "a": 0}]}},
        {},
    ):
        _same(obj)
    for declined in (
        {"apiVersion": {"b": 1, "a": 2}, "kind": "X"},  # a head value is written unsorted
        {"apiVersion": "v1", "kind": "X", "spec": {"1": "a", 1: "b"}},  # one key as text
    ):
        assert not _same(declined, may_decline=True)


_metadata = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.sampled_from(AWKWARD[:30]), st.none()),
        "namespace": st.sampled_from(["team", "", "a b", "5"]),
        "labels": st.dictionaries(_keys, st.sampled_from(AWKWARD[:30]), max_size=3),
        "annotations": st.one_of(st.none(), st.dictionaries(_keys, _values, max_size=2)),
        "uid": st.just("dropped"),
    },
)


@settings(max_examples=300, deadline=None)
@given(
    payload=st.dictionaries(_keys, _values, max_size=5),
    metadata=st.one_of(_metadata, st.none()),
    head=st.sampled_from([("v1", "ConfigMap"), ("apps/v1", "yes"), (None, "X"), ("5", "")]),
)
def test_generated_objects_are_written_alike_or_declined_alike(
    payload: dict[str, Any], metadata: dict[str, Any] | None, head: tuple[Any, Any]
) -> None:
    obj: dict[str, Any] = {**payload, "apiVersion": head[0], "kind": head[1]}
    if metadata is not None:
        obj["metadata"] = metadata
    _same(obj)


@settings(max_examples=300, deadline=None)
@given(payload=st.dictionaries(_benign_keys, _benign_values, max_size=5), metadata=_metadata)
def test_generated_plain_objects_are_taken_and_written_byte_for_byte(
    payload: dict[str, Any], metadata: dict[str, Any]
) -> None:
    _same({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "spec": payload})


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.sampled_from(AWKWARD),
        st.text(alphabet="aeEfFlLnNoOsStTuUyYrR0159.-+:_xX~<= ", max_size=9),
        st.text(max_size=9),
    )
)
def test_the_shortcut_for_long_words_says_what_yaml11_typed_says(text: str) -> None:
    """A string longer than five characters starting with a letter is never YAML 1.1-typed."""
    assert _typed(text) == yaml11_typed(text)
