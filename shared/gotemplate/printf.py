"""Go's ``fmt.Sprintf``, ``Sprint`` and ``Sprintln`` for the verbs a template may use, each
result built in ``bounds.Pieces`` so it is refused before it passes its room (N3). One handler
per verb (``_VERBS``): a handler gives the text and whether it is a number (zero padding
applies), or None when the argument does not suit the verb (Go prints ``%!d(string=x)``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shared.gotemplate.bounds import MAX_VALUE, MAX_WIDTH, Pieces, too_long
from shared.gotemplate.show import go_type, quote, show
from shared.gotemplate.values import Record, TemplateError

_VERB = re.compile(r"%([-+# 0]*)([0-9]+)?(?:\.([0-9]*))?(.?)", re.S)

#: (flags, precision, argument) -> (text, numeric), or None for a mismatch.
_Handler = Callable[[str, int | None, object], tuple[str, bool] | None]


def _pad(text: str, flags: str, width: int | None, numeric: bool) -> str:
    """``text`` padded to ``width``: on the right with ``-``, else with zeros for ``0`` (after
    a number's sign; Go pads any text with zeros, ``%05s`` is ``000ab``), else spaces."""
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags:
        sign = text[0] if numeric and text[:1] in "+-" else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def _is_int(arg: object) -> bool:
    return isinstance(arg, int) and not isinstance(arg, bool)


def _char(code: int) -> str:
    return chr(code) if 0 <= code <= 0x10FFFF else "\ufffd"


def _v(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    """``%v``: ``%+v`` adds no sign (Go's ``+`` is then ``plusV``: a struct's field names)."""
    return show(arg), _is_int(arg) or isinstance(arg, float)


def _s(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    if isinstance(arg, str):
        text = arg
    elif isinstance(arg, list | tuple | dict) and all(
        isinstance(v, str) for v in (arg.values() if isinstance(arg, dict) else arg)
    ):
        text = show(arg)
    else:
        return None
    return (text if prec is None else text[:prec]), False


def _q(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    if isinstance(arg, str):
        return quote(arg if prec is None else arg[:prec]), False
    if isinstance(arg, int) and _is_int(arg):
        return "'" + quote(_char(arg))[1:-1] + "'", False
    return None


def _integer(verb: str) -> _Handler:
    """``%d %x %X %o %b``: an integer in its base; ``%x %X`` also a string's bytes in hex."""

    def handler(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
        if isinstance(arg, int) and _is_int(arg):
            body = format(abs(arg), verb)
            if prec is not None:
                body = body.rjust(prec, "0")
            sign = "-" if arg < 0 else ("+" if "+" in flags else (" " if " " in flags else ""))
            return sign + _prefix(verb, flags, body) + body, True
        if verb in "xX" and isinstance(arg, str):
            return _hex_bytes(verb, flags, arg), False
        return None

    return handler


def _prefix(verb: str, flags: str, body: str) -> str:
    """``#``: ``0x``/``0X`` before hex, ``0b`` before binary, ``0`` before octal."""
    if "#" not in flags:
        return ""
    prefixes = {"x": "0x", "X": "0X", "b": "0b", "o": "" if body.startswith("0") else "0"}
    return prefixes.get(verb, "")


def _hex_bytes(verb: str, flags: str, text: str) -> str:
    """``%x``/``%X`` of a string: its UTF-8 bytes; ``% x`` spaced, ``%#x`` with ``0x``."""
    prefix = ("0X" if verb == "X" else "0x") if "#" in flags else ""
    hexes = [format(byte, "02X" if verb == "X" else "02x") for byte in text.encode()]
    if " " in flags:
        return " ".join(prefix + h for h in hexes)
    return prefix + "".join(hexes)


def _u(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    """``%U``: ``U+0041``."""
    if isinstance(arg, int) and _is_int(arg):
        return f"U+{arg & 0xFFFFFFFFFFFFFFFF:04X}", False
    return None


def _t(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    return (show(arg), False) if isinstance(arg, bool) else None


def _c(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
    return (_char(arg), False) if isinstance(arg, int) and _is_int(arg) else None


def _floating(verb: str) -> _Handler:
    """``%f %e %E %g %G``: a float64, six digits of precision unless given."""

    def handler(flags: str, prec: int | None, arg: object) -> tuple[str, bool] | None:
        if not isinstance(arg, float):
            return None
        spec = ("+" if "+" in flags else "") + f".{6 if prec is None else prec}{verb}"
        return format(arg, spec), True

    return handler


_VERBS: dict[str, _Handler] = {
    "v": _v, "s": _s, "q": _q, "t": _t, "c": _c, "U": _u,
    **{verb: _integer(verb) for verb in "dxXob"},
    **{verb: _floating(verb) for verb in "feEgG"},
}  # fmt: skip


def _verb(verb: str, flags: str, width: int | None, prec: int | None, arg: object) -> str:
    handler = _VERBS.get(verb)
    made = handler(flags, prec, arg) if handler else None
    if made is None:
        return f"%!{verb}({go_type(arg)}={show(arg)})" if arg is not None else f"%!{verb}(<nil>)"
    return _pad(made[0], flags, width, made[1])


@dataclass(frozen=True)
class _Spec:
    """One ``%`` directive: its verb, flags, width and precision."""

    verb: str
    flags: str
    width: int | None
    prec: int | None


def _emit(out: Pieces, spec: _Spec, arg: object, top: bool = True) -> None:
    """``arg`` formatted into ``out``; a list, map or struct element by element, the verb,
    flags and width applied to each (Go's ``%03d`` of ``[1 2]`` is ``[001 002]``), so the text
    grows piece by piece inside the bound."""
    if isinstance(arg, dict | list | tuple):
        _container(out, spec, arg)
    elif arg is None and not top:
        out.add(_pad("<nil>", spec.flags, spec.width, False))
    else:
        out.add(_verb(spec.verb, spec.flags, spec.width, spec.prec, arg))


def _container(
    out: Pieces, spec: _Spec, arg: dict[str, object] | list[object] | tuple[object, ...]
) -> None:
    if isinstance(arg, Record):
        names = spec.verb == "v" and "+" in spec.flags  # %+v: a struct's field names
        out.add("{")
        for i, (key, value) in enumerate(arg.items()):
            out.add((" " if i else "") + (f"{key}:" if names else ""))
            _emit(out, spec, value, top=False)
        out.add("}")
    elif isinstance(arg, dict):
        out.add("map[")
        for i, key in enumerate(sorted(arg)):
            out.add(" " if i else "")
            _emit(out, spec, key, top=False)
            out.add(":")
            _emit(out, spec, arg[key], top=False)
        out.add("]")
    else:
        out.add("[")
        for i, value in enumerate(arg):
            out.add(" " if i else "")
            _emit(out, spec, value, top=False)
        out.add("]")


def _number(text: str | None) -> int | None:
    return int(text) if text else None


def sprintf(fmt: str, args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprintf`` for the verbs v s q d x X o b t c U f e g, flags, width, precision;
    a mismatch prints as Go prints it (``%!d(string=x)``, ``%!s(MISSING)``, ``%!(EXTRA ...)``).
    A result longer than ``room`` characters is refused (``refusal``), before it is built."""
    out = Pieces(room, refusal or too_long("printf", room))
    used = 0
    pos = 0
    while True:
        at = fmt.find("%", pos)
        if at < 0:
            out.add(fmt[pos:])
            break
        out.add(fmt[pos:at])
        m = _VERB.match(fmt, at)
        assert m is not None
        flags, width, prec, verb = m.group(1), m.group(2), m.group(3), m.group(4)
        pos = m.end()
        if verb == "*":
            raise TemplateError("printf: a * width or precision is refused")
        w = _number(width)
        p = (_number(prec) or 0) if prec is not None else None
        if (w or 0) > MAX_WIDTH or (p or 0) > MAX_WIDTH:
            raise TemplateError(f"printf: a width or precision over {MAX_WIDTH} is refused")
        if verb in ("%", ""):
            out.add("%" if verb else "%!(NOVERB)")
            continue
        if used >= len(args):
            out.add(f"%!{verb}(MISSING)")
            continue
        out.fits(args[used])  # so a verb's text (at most ten times its argument's) is bounded
        _emit(out, _Spec(verb, flags, w, p), args[used])
        used += 1
    _extra(out, args[used:])
    return out.text()


def _extra(out: Pieces, unused: Sequence[object]) -> None:
    """Go's ``%!(EXTRA type=value, ...)`` for the arguments no verb took."""
    if not unused:
        return
    out.add("%!(EXTRA ")
    for i, arg in enumerate(unused):
        out.add((", " if i else "") + (f"{go_type(arg)}=" if arg is not None else ""))
        out.shown(arg)
    out.add(")")


def sprint(args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprint``: a space between two operands when neither is a string; a result
    longer than ``room`` characters is refused (``refusal``), before it is built."""
    out = Pieces(room, refusal or too_long("print", room))
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.add(" ")
        out.shown(arg)
    return out.text()


def sprintln(args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprintln``: the operands shown, a space between each, and a newline."""
    out = Pieces(room, refusal or too_long("println", room))
    for i, arg in enumerate(args):
        if i:
            out.add(" ")
        out.shown(arg)
    out.add("\n")
    return out.text()
