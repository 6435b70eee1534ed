"""Values as Go's ``fmt`` shows them with ``%v`` (and ``%q``'s quoting), and their Go type
names for error messages. ``parts`` yields a value's text piece by piece, so a long value is
measured, or printed up to the output's limit, without being built whole (N3)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal

from shared.gotemplate.values import Record


def go_type(value: object) -> str:
    """The Go type a value stands for, as Go's messages name it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Record):
        return value.type_name
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    return "<nil>"


def _float(value: float) -> str:
    """Go's ``%v`` (``strconv.FormatFloat(v, 'g', -1, 64)``): the shortest digits that read
    back as ``value`` (Python's ``repr`` finds the same), with an exponent when it is below -4
    or at least 6 (``1e+06``, ``1.234567e+06``, ``123456``)."""
    if math.isnan(value) or math.isinf(value):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    if not any(digits):
        return "-0" if sign else "0"
    power = len(digits) - 1 + exponent
    if -4 <= power < 6:
        return format(Decimal(repr(value)).normalize(), "f")
    mantissa = "".join(map(str, digits))
    mantissa = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"


def show(value: object) -> str:
    """``value`` as Go's ``%v`` prints it."""
    return "".join(parts(value))


def parts(value: object) -> Iterator[str]:
    """``show(value)`` piece by piece, so a long value can be measured, or printed up to the
    output's limit, without being built whole."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list | tuple):
        if isinstance(value, Record):
            opening, items = "{", [("", v) for v in value.values()]
        elif isinstance(value, dict):
            opening, items = "map[", [(f"{k}:", value[k]) for k in sorted(value)]
        else:
            opening, items = "[", [("", v) for v in value]
        yield opening
        for i, (prefix, item) in enumerate(items):
            yield (" " if i else "") + prefix
            yield from parts(item)
        yield "}" if isinstance(value, Record) else "]"
    else:
        yield _scalar(value)


def _scalar(value: object) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float(value)
    return str(value)  # an int has 64 bits at most (constants), or counts something


def measure(value: object, cap: int) -> int:
    """How many characters ``show(value)`` has, counted without building it (a value too long
    to make costs no memory to measure); counting stops once past ``cap``."""
    total = 0
    for part in parts(value):
        total += len(part)
        if total > cap:
            break
    return total


def brief(value: object) -> str:
    """``value`` shown for an error message: at most 80 characters."""
    if measure(value, 80) <= 80:
        return show(value)
    return f"a {go_type(value)} of over 80 characters"


def quote(text: str) -> str:
    """Go's ``strconv.Quote``: printable characters kept, the others escaped."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(c)])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out) + '"'
