"""The functions a template may call, as Go's ``text/template`` defines them, and what Go's
evaluation does to a value: its truth, reading a field, comparing, indexing, its length.
``print``, ``printf`` and ``println`` make values, so the runner calls them with its budget
(``runner.Run.make``); ``and`` and ``or`` stop at the deciding argument, so the runner
evaluates their arguments one by one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shared.gotemplate.show import brief, go_type
from shared.gotemplate.values import GoMap, Record, TemplateError

FUNCTIONS = (
    "and", "eq", "ge", "gt", "index", "le", "len", "lt", "ne", "not", "or", "print", "printf",
    "println",
)  # fmt: skip
#: Lowest and highest (None: any) number of arguments of a function that has bounds.
_ARITY: dict[str, tuple[int, int | None]] = {
    "len": (1, 1), "not": (1, 1), "index": (1, None), "printf": (1, None),
    "ne": (2, 2), "lt": (2, 2), "le": (2, 2), "gt": (2, 2), "ge": (2, 2),
    "eq": (2, None), "and": (1, None), "or": (1, None),
}  # fmt: skip


def truth(value: object) -> bool:
    """Go's template truth: false, 0, nil and empty values are false; a struct is true."""
    if isinstance(value, Record):
        return True
    return bool(value)


def field(value: object, name: str) -> object:
    """``value.name``: a struct's field or a map's entry; one it lacks is an error."""
    if isinstance(value, Record):
        if name not in value:
            raise TemplateError(f"can't evaluate field {name} in type {value.type_name}")
        return value[name]
    if isinstance(value, GoMap):
        if name in value:
            return value[name]
        if name in value.zero_keys:
            return value.zero
        raise TemplateError(f'map has no entry for key "{name}"')
    if isinstance(value, dict):
        if name not in value:
            raise TemplateError(f'map has no entry for key "{name}"')
        return value[name]
    if value is None:
        raise TemplateError(f"nil pointer evaluating interface {{}}.{name}")
    raise TemplateError(f"can't evaluate field {name} in type {go_type(value)}")


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _equal(a: object, b: object) -> bool:
    if isinstance(a, Record) and isinstance(b, Record):  # Go's == on two structs
        if a.type_name != b.type_name or list(a) != list(b):
            raise TemplateError("incompatible types for comparison")
        return all(_equal(x, y) for x, y in zip(a.values(), b.values(), strict=True))
    ka, kb = _kind(a), _kind(b)
    if ka == "other" or kb == "other":
        if a is None or b is None:
            return a is b
        other = a if ka == "other" else b
        raise TemplateError(f"non-comparable type {brief(other)}: {go_type(other)}")
    if ka != kb or (ka == "number" and type(a) is not type(b)):
        raise TemplateError("incompatible types for comparison")
    return a == b


def _less(a: object, b: object) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka not in ("number", "string") or kb not in ("number", "string"):
        raise TemplateError("invalid type for comparison")
    if ka != kb or type(a) is not type(b):
        raise TemplateError("incompatible types for comparison")
    return bool(a < b)  # type: ignore[operator]


def _index(item: object, keys: Sequence[object]) -> object:
    for key in keys:
        if isinstance(item, list | tuple | str):
            if not isinstance(key, int) or isinstance(key, bool):
                raise TemplateError(f"cannot index slice/array with type {go_type(key)}")
            size = len(item.encode()) if isinstance(item, str) else len(item)
            if not 0 <= key < size:
                raise TemplateError(f"index out of range: {key}")
            item = item.encode()[key] if isinstance(item, str) else item[key]
        elif isinstance(item, dict) and not isinstance(item, Record):
            if not isinstance(key, str):
                raise TemplateError(f"value has type {go_type(key)}; should be string")
            item = item.get(key, item.zero if isinstance(item, GoMap) else None)
        elif item is None:
            raise TemplateError("index of untyped nil")
        else:
            raise TemplateError(f"can't index item of type {go_type(item)}")
    return item


def _length(value: object) -> int:
    if value is None:
        raise TemplateError("len of nil pointer")
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, list | tuple | dict) and not isinstance(value, Record):
        return len(value)
    raise TemplateError(f"len of type {go_type(value)}")


def arity(name: str, n: int) -> None:
    """TemplateError when ``name`` cannot take ``n`` arguments, in Go's words."""
    wanted = _ARITY.get(name)
    if wanted is None:
        return
    low, high = wanted
    if n < low or (high is not None and n > high):
        want = f"{low}" if low == high else f"at least {low}"
        raise TemplateError(f"wrong number of args for {name}: want {want} got {n}")


#: The functions that take their arguments' values and make no text.
PURE: dict[str, Callable[[list[object]], object]] = {
    "not": lambda args: not truth(args[0]),
    "len": lambda args: _length(args[0]),
    "index": lambda args: _index(args[0], args[1:]),
    "eq": lambda args: any(_equal(args[0], other) for other in args[1:]),
    "ne": lambda args: not _equal(args[0], args[1]),
    "lt": lambda args: _less(args[0], args[1]),
    "le": lambda args: _less(args[0], args[1]) or _equal(args[0], args[1]),
    "gt": lambda args: not (_less(args[0], args[1]) or _equal(args[0], args[1])),
    "ge": lambda args: not _less(args[0], args[1]),
}
