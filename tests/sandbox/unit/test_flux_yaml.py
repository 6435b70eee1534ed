"""The kustomize-controller double reads manifests as the real controller does (issue 11, the
reliability probe's YAML 1.1 finding): with yaml.v3's rules, because kyaml parses each resource
and the JSON hop fixes its types before the YAML 1.1 reader at the end sees it
(``sandbox/flux/goyaml.py`` names the upstream steps). Before this, the double read with
PyYAML (YAML 1.1): ``enabled: yes`` became ``True`` there, and a ConfigMap named ``on`` could
not be built, where the real controller applies the strings.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox.flux.goyaml import load_all, number
from sandbox.flux.manifests import BuildFailed, read_objects
from shared.model.manifest import render

FLAGS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: on
  namespace: t3
data:
  enabled: yes
  legacy: no
  mode: on
  off: off
  y: y
  date: 2001-12-14
  time: 1:20
"""


def test_yaml11_booleans_are_strings_for_the_controller(tmp_path: Path) -> None:
    """The probe's ``flags`` ConfigMap written by hand, unquoted: the real controller applies
    the strings (yaml.v3 has only true/false), so the double does too. Failed before (checked):
    PyYAML read ``yes``/``no``/``on``/``off``/``y`` as booleans and keys ``True``/``False``."""
    (tmp_path / "flags.yaml").write_text(FLAGS, encoding="utf-8")
    [obj] = read_objects(tmp_path)
    assert obj["metadata"]["name"] == "on"
    assert obj["data"] == {
        "enabled": "yes",
        "legacy": "no",
        "mode": "on",
        "off": "off",
        "y": "y",
        "date": "2001-12-14",
        "time": "1:20",
    }


@pytest.mark.parametrize(
    ("text", "read"),
    [("true", True), ("FALSE", False), ("yes", "yes"), ("~", None), ("null", None),
     ("3", 3), ("-3", -3), ("+12", 12), ("012", 10), ("089", 89), ("0x1F", 31), ("0o17", 15),
     ("0b101", 5), ("1_000", 1000), ("1e3", 1000), ("1.5", 1.5), (".5", 0.5), ("1.", 1),
     ("2001-12-14", "2001-12-14"), ("1:20", "1:20"), ("v1.2.3", "v1.2.3"), ("=", "="),
     ("nginx:1.25", "nginx:1.25"), ("0xZZ", "0xZZ")],
)  # fmt: skip
def test_plain_scalars_read_as_yaml_v3_and_the_json_hop_make_them(text: str, read: Any) -> None:
    [doc] = load_all(f"k: {text}\n")
    assert doc == {"k": read}
    assert type(doc["k"]) is type(read)


def test_what_json_cannot_carry_fails_the_build(tmp_path: Path) -> None:
    """``.inf`` is a float yaml.v3 reads and JSON cannot write; a nested non-string key makes a
    map JSON cannot write; yaml.v3 refuses a duplicate key."""
    assert math.isinf(float(number(".inf")))
    for i, body in enumerate(("ratio: .inf", "nested: {true: 1}", "a: 1\na: 2")):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "x.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n{body}\n", encoding="utf-8"
        )
        with pytest.raises(BuildFailed):
            read_objects(folder)


WORD = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
    st.sampled_from(["yes", "On", "n", "~", "012", "089", "1e3", "1:20", "2001-12-14", ".inf"]),
)


@settings(max_examples=200, deadline=None)
@given(name=WORD.filter(bool), data=st.dictionaries(WORD, WORD, max_size=6))
def test_what_the_product_writes_the_double_reads_back(name: str, data: dict[str, str]) -> None:
    """M2 under the controller's reading: the product's YAML of any object is that object."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    assert load_all(render(obj).decode("utf-8")) == [obj]
