"""M2 (the reliability probe's YAML 1.1 finding): the YAML written decodes to exactly the API
object under every reader that applies it, YAML 1.1 (PyYAML, as kubectl's and Argo CD's
``sigs.k8s.io/yaml`` read plain scalars) and YAML 1.2 (ruamel), for any string as a key, a
value or a name.

Failed before the fix: ``yes``, ``on``, ``y``, ``off`` (values, keys and names) were written
plain by both writers, and ``1:20`` by ruamel; PyYAML read booleans and a number back.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from shared.model.manifest import render
from shared.model.simple_yaml import yaml11_typed

#: Any Unicode text but lone surrogates (an API object is UTF-8 JSON: it cannot hold one).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
#: Strings YAML 1.1 types, mixed in so that the property meets them often.
TYPED = st.sampled_from(
    ["yes", "No", "ON", "off", "y", "N", "yEs", "true", "~", "null", "0o17", "0x1F", "1_000",
     ".inf", "-.Inf", ".NaN", "1:20", "190:20:30.15", "012", "1e3", "2001-12-14",
     "2001-12-14t21:59:43.10-05:00", "<<", "=", "0b101", "+12", "1.", "-.5"]
)  # fmt: skip
WORD = st.one_of(TEXT, TYPED)


def _object(name: str, namespace: str, data: dict[str, str], labels: dict[str, str]) -> Any:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def _read_both(data: bytes) -> tuple[Any, Any]:
    return yaml.safe_load(data), YAML(typ="safe", pure=True).load(data)


@settings(max_examples=400, deadline=None)
@given(
    name=WORD.filter(bool),
    namespace=WORD.filter(bool),
    data=st.dictionaries(WORD, WORD, max_size=6),
    labels=st.dictionaries(WORD, WORD, max_size=3),
)
def test_every_reader_reads_back_the_object(
    name: str, namespace: str, data: dict[str, str], labels: dict[str, str]
) -> None:
    obj = _object(name, namespace, data, labels)
    yaml11, yaml12 = _read_both(render(obj))
    assert yaml11 == obj
    assert yaml12 == obj


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Yes", "OFF", "yEs"])
def test_yaml11_booleans_are_quoted_as_keys_values_and_names(word: str) -> None:
    """The probe's reproduction: ``kubectl create configmap flags --from-literal=...``."""
    obj = _object(word, "t3", {word: word, "enabled": word}, {})
    text = render(obj).decode()
    assert f"name: '{word}'" in text
    assert f"'{word}': '{word}'" in text
    assert _read_both(render(obj)) == (obj, obj)


@pytest.mark.parametrize(
    ("text", "typed"),
    [("yes", True), ("1:20", True), ("1_000", True), ("0o17", True), (".inf", True),
     ("2001-12-14", True), ("", True), ("yess", False), ("a1:20", False), ("v1.2.3", False),
     ("1.2.3", False), ("on-call", False), ("nginx:1.25", False)],
)  # fmt: skip
def test_what_yaml11_types(text: str, typed: bool) -> None:
    """Cross-checked with PyYAML's own resolver (YAML 1.1), which types all of these but the
    1.2 spelling ``0o17`` (quoted all the same: YAML 1.2 readers type it)."""
    assert yaml11_typed(text) is typed
    pyyaml_types_it = not isinstance(yaml.safe_load(f"k: {text}")["k"], str)
    assert pyyaml_types_it is (typed and text != "0o17")
