"""The Kubernetes CEL library functions cel-python lacks.

kube-apiserver compiles CRD rules with cel-go plus Kubernetes' libraries
(https://kubernetes.io/docs/reference/using-api/cel/): the extended strings library
(``lowerAscii``, ``split``, ``trim``...), the lists library (``isSorted``, ``sum``, ``min``...),
the regex library (``find``, ``findAll``) and CEL optionals (``hasValue``, ``value``,
``orValue``, used on ``oldSelf`` with ``optionalOldSelf: true``). cel-python has none of them,
so they are written here against cel-python's types. Anything else (quantity, url, ip, cidr,
format, ``?.`` syntax) stays unsupported and fails the rule as an evaluation error.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError


@dataclass(frozen=True, slots=True)
class CelOptional:
    """A CEL ``optional``: ``oldSelf`` of a rule with ``optionalOldSelf: true``."""

    value: Any = None
    present: bool = False


def _overload(name: str) -> CELEvalError:
    return CELEvalError(f"no such overload: {name}", TypeError, ())


def _has_value(target: Any) -> Any:
    if not isinstance(target, CelOptional):
        return _overload("hasValue")
    return celtypes.BoolType(target.present)


def _value(target: Any) -> Any:
    if not isinstance(target, CelOptional):
        return _overload("value")
    if not target.present:
        return CELEvalError("optional.none() dereference", ValueError, ())
    return target.value


def _or_value(target: Any, default: Any) -> Any:
    if not isinstance(target, CelOptional):
        return _overload("orValue")
    return target.value if target.present else default


_TO_UPPER = MappingProxyType({c: c - 32 for c in range(ord("a"), ord("z") + 1)})
_TO_LOWER = MappingProxyType({c: c + 32 for c in range(ord("A"), ord("Z") + 1)})


def _ascii(text: Any, upper: bool) -> Any:
    """lowerAscii / upperAscii: only ASCII letters change case."""
    if not isinstance(text, str):
        return _overload("upperAscii" if upper else "lowerAscii")
    return celtypes.StringType(text.translate(_TO_UPPER if upper else _TO_LOWER))


def _char_at(text: Any, position: Any) -> Any:
    if not isinstance(text, str) or not isinstance(position, int) or not 0 <= position <= len(text):
        return CELEvalError("index out of range", IndexError, ())
    return celtypes.StringType(text[position : position + 1])


def _index_of(target: Any, item: Any, *offset: Any) -> Any:
    if isinstance(target, str) and isinstance(item, str):
        start = int(offset[0]) if offset else 0
        return celtypes.IntType(target.find(item, start))
    if isinstance(target, list):
        return celtypes.IntType(next((i for i, v in enumerate(target) if v == item), -1))
    return _overload("indexOf")


def _last_index_of(target: Any, item: Any, *offset: Any) -> Any:
    if isinstance(target, str) and isinstance(item, str):
        end = int(offset[0]) + len(item) if offset else len(target)
        return celtypes.IntType(target.rfind(item, 0, end))
    if isinstance(target, list):
        found = [i for i, v in enumerate(target) if v == item]
        return celtypes.IntType(found[-1] if found else -1)
    return _overload("lastIndexOf")


def _replace(text: Any, old: Any, new: Any, *limit: Any) -> Any:
    if not all(isinstance(v, str) for v in (text, old, new)):
        return _overload("replace")
    count = int(limit[0]) if limit else -1
    return celtypes.StringType(text.replace(old, new, count))


def _split(text: Any, separator: Any, *limit: Any) -> Any:
    if not isinstance(text, str) or not isinstance(separator, str):
        return _overload("split")
    count = int(limit[0]) if limit else -1
    if count == 0:
        return celtypes.ListType([])
    parts = list(text) if separator == "" else text.split(separator, count - 1 if count > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text: Any, start: Any, *end: Any) -> Any:
    if not isinstance(text, str) or not isinstance(start, int):
        return _overload("substring")
    stop = int(end[0]) if end else len(text)
    if not 0 <= start <= stop <= len(text):
        return CELEvalError("index out of range", IndexError, ())
    return celtypes.StringType(text[start:stop])


def _trim(text: Any) -> Any:
    return celtypes.StringType(text.strip()) if isinstance(text, str) else _overload("trim")


def _join(items: Any, *separator: Any) -> Any:
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        return _overload("join")
    return celtypes.StringType((separator[0] if separator else "").join(items))


def _is_sorted(items: Any) -> Any:
    if not isinstance(items, list):
        return _overload("isSorted")
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(items)))


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        return _overload("sum")
    return sum(items[1:], items[0]) if items else celtypes.IntType(0)


def _extreme(pick: Callable[[list[Any]], Any], name: str) -> Callable[[Any], Any]:
    def extreme(items: Any) -> Any:
        if not isinstance(items, list) or not items:
            return CELEvalError(f"{name} called on an empty list", ValueError, ())
        return pick(items)

    return extreme


def _find(text: Any, pattern: Any) -> Any:
    if not isinstance(text, str) or not isinstance(pattern, str):
        return _overload("find")
    match = re.search(pattern, text)
    return celtypes.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, *limit: Any) -> Any:
    if not isinstance(text, str) or not isinstance(pattern, str):
        return _overload("findAll")
    found = [m.group(0) for m in re.finditer(pattern, text)]
    if limit and int(limit[0]) >= 0:
        found = found[: int(limit[0])]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


FUNCTIONS: MappingProxyType[str, Callable[..., Any]] = MappingProxyType(
    {
        "hasValue": _has_value,
        "value": _value,
        "orValue": _or_value,
        "lowerAscii": lambda text: _ascii(text, upper=False),
        "upperAscii": lambda text: _ascii(text, upper=True),
        "charAt": _char_at,
        "indexOf": _index_of,
        "lastIndexOf": _last_index_of,
        "replace": _replace,
        "split": _split,
        "substring": _substring,
        "trim": _trim,
        "join": _join,
        "isSorted": _is_sorted,
        "sum": _sum,
        "min": _extreme(min, "min"),
        "max": _extreme(max, "max"),
        "find": _find,
        "findAll": _find_all,
    }
)
