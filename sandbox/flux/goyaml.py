"""How kustomize-controller reads a manifest: ``gopkg.in/yaml.v3`` into Go maps, then JSON.

The real controller builds the path with kustomize (``kyaml``), which parses every resource
file with ``gopkg.in/yaml.v3``; each resource is turned into JSON by decoding it into a
``map[string]interface{}`` (kyaml ``RNode.MarshalJSON``), written back as YAML from that JSON
(kustomize ``Resource.AsYAML``: ``sigs.k8s.io/yaml.JSONToYAML``) and read into objects by
fluxcd/pkg ``ssautil.ReadObjects``. The JSON hop fixes every value's type, so what a plain
scalar *means* is decided by yaml.v3 alone, not by the YAML 1.1 reader at the end:

- booleans are only ``true``/``false`` (``True``, ``TRUE``, ...): ``yes``, ``no``, ``on``,
  ``off``, ``y`` and ``n`` are strings (YAML 1.1 readers such as PyYAML make them booleans);
- ``~``, ``null``, ``Null``, ``NULL`` and the empty scalar are null;
- integers as Go's ``strconv.ParseInt(s, 0, 64)`` reads them once ``_`` are removed: decimal,
  ``0x``, ``0o``, ``0b`` and the old octal ``0777``; then ``ParseUint``; then a float when the
  text matches yaml.v3's float pattern (so ``089`` is 89, ``1e3`` is 1000); ``.5`` is a float;
- ``.inf``/``.nan`` (and their signed and capitalised spellings) are floats, which JSON cannot
  hold: the build fails;
- timestamps (``2001-12-14``) stay strings (yaml.v3 keeps them as text in an interface value);
  sexagesimal numbers (``1:20``) are strings; ``<<`` is a merge key, ``=`` a string;
- a duplicate mapping key fails (yaml.v3 refuses it);
- an object's top-level keys are taken as their text (the ``map[string]interface{}``); a nested
  mapping with a key that is not a string cannot be written as JSON: the build fails.

A float that is a whole number comes out of the JSON hop as an integer (``1e3`` is 1000).
``kustomization.yaml`` itself is not read here: kustomize reads it with ``sigs.k8s.io/yaml``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

#: The implicit tag this reader gives a plain scalar that may be a number; its constructor
#: decides, as yaml.v3 does, whether it is an integer, a float or a string.
NUMBER = "tag:gitops-reverser.sandbox,2026:goyaml-number"
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_SPECIAL_FLOATS = {
    f"{sign}{dot}": value
    for sign, value in (("", math.inf), ("+", math.inf), ("-", -math.inf))
    for dot in (".inf", ".Inf", ".INF")
} | {nan: math.nan for nan in (".nan", ".NaN", ".NAN")}
#: yaml.v3's ``yamlStyleFloat``.
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
#: yaml.v3's accepted timestamp layouts (date, then optional time and zone), kept as text.
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?)?)?$"
)
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


class GoYamlV3Loader(yaml.SafeLoader):
    """PyYAML's safe loader with yaml.v3's resolution of plain scalars (module docstring)."""

    yaml_implicit_resolvers: dict[Any, Any] = {}
    _root: Node | None = None

    def construct_document(self, node: Node) -> Any:
        self._root = node
        return super().construct_document(node)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and node is self._root:
                key: Any = key_node.value  # map[string]interface{}: the key's text
            else:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    raise ConstructorError(
                        None, None, f"json: unsupported type: map key {key!r}", key_node.start_mark
                    )
            if key in mapping:
                raise ConstructorError(
                    None, None, f"mapping key {key!r} already defined", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_goyaml_bool(self, node: ScalarNode) -> bool:
        return _BOOL[node.value]

    def construct_goyaml_text(self, node: ScalarNode) -> str:
        return str(node.value)

    def construct_goyaml_number(self, node: ScalarNode) -> int | float | str:
        return number(node.value)


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, falling back to ``ParseUint``; None if neither."""
    sign, body = (text[0], text[1:]) if text[:1] in "+-" else ("", text)
    base, digits = 10, body
    if body[:2] in ("0x", "0X"):
        base, digits = 16, body[2:]
    elif body[:2] in ("0o", "0O"):
        base, digits = 8, body[2:]
    elif body[:2] in ("0b", "0B"):
        base, digits = 2, body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, digits = 8, body[1:]
    if not digits or not all(c in _DIGITS[base] for c in digits):
        return None
    value = int(digits, base) * (-1 if sign == "-" else 1)
    if _INT64[0] <= value <= _INT64[1] or (sign != "-" and value <= _UINT64_MAX):
        return value
    return None


def number(text: str) -> int | float | str:
    """A plain scalar that starts like a number, as yaml.v3 resolves it into an interface."""
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if text.startswith("."):
        try:
            return float(text) if _FLOAT.match(text) else text
        except ValueError:
            return text
    if _TIMESTAMP.match(text):
        return text
    plain = text.replace("_", "")
    as_int = _go_int(plain)
    if as_int is not None:
        return as_int
    if _FLOAT.match(plain):
        return float(plain)
    return text


def _resolver(tag: str, pattern: str, first: str | list[str]) -> None:
    GoYamlV3Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))


_resolver("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_resolver("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])
_resolver("tag:yaml.org,2002:merge", r"^(?:<<)$", "<")
_resolver(NUMBER, r"^[-+0-9.]", "-+0123456789.")
GoYamlV3Loader.add_constructor("tag:yaml.org,2002:bool", GoYamlV3Loader.construct_goyaml_bool)
GoYamlV3Loader.add_constructor(NUMBER, GoYamlV3Loader.construct_goyaml_number)
# an explicit !!timestamp stays text in an interface value too
GoYamlV3Loader.add_constructor("tag:yaml.org,2002:timestamp", GoYamlV3Loader.construct_goyaml_text)


class JsonUnsupported(ValueError):
    """A value the JSON hop cannot carry (a NaN or an infinity)."""


def _through_json(value: Any) -> Any:
    """What the JSON hop makes of a decoded value: whole floats become integers; NaN and the
    infinities cannot be written (``json: unsupported value``)."""
    if isinstance(value, dict):
        return {k: _through_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_through_json(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise JsonUnsupported(f"json: unsupported value: {value}")
        if value.is_integer() and abs(value) < 1e21:
            return int(value)
    return value


def load_all(text: str) -> list[Any]:
    """Every document of ``text`` as the controller reads it (raises ``yaml.YAMLError`` or
    ``JsonUnsupported``)."""
    return [_through_json(d) for d in yaml.load_all(text, Loader=GoYamlV3Loader)]
