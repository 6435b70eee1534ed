"""Splitting a template's source into text and actions, and an action into tokens; the trim
markers (``{{- `` and `` -}}``) and comments (``{{/* */}}``) are handled here, as are the
escapes of quoted strings and the numbers Go's constants may be (at most 64 bits, N3)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from shared.gotemplate.values import TemplateError

SPACE = " \t\r\n"
_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\n]+)
    |(?P<str>"(?:[^"\\\n]|\\.)*")
    |(?P<raw>`[^`]*`)
    |(?P<char>'(?:[^'\\\n]|\\.)+')
    |(?P<num>[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+
        |(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9]+)?))
    |(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    |(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    |(?P<dot>\.)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<declare>:=)
    |(?P<assign>=)
    |(?P<punct>[()|,])""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}  # fmt: skip

_UNTERMINATED = {'"': "unterminated quoted string", "`": "unterminated raw quoted string"}


@dataclass(frozen=True)
class Tok:
    """A token of an action: ``kind`` is the name of the ``_TOKEN`` group it matched."""

    kind: str
    text: str


def unquote(text: str) -> str:
    """The body of a quoted string or character with its escapes read, as Go reads them."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "xuU":
            i = _hex_escape(text, i, e, out)
        elif e in "01234567":
            digits = text[i + 1 : i + 4]
            if not re.fullmatch(r"[0-7]{3}", digits):
                raise TemplateError(f"bad escape \\{digits} in a string")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise TemplateError(f"unknown escape \\{e} in a string")
    return "".join(out)


def _hex_escape(text: str, i: int, e: str, out: list[str]) -> int:
    """``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` at ``i``, appended to ``out``; where it ends."""
    n = {"x": 2, "u": 4, "U": 8}[e]
    digits = text[i + 2 : i + 2 + n]
    if len(digits) != n or not re.fullmatch(r"[0-9a-fA-F]+", digits):
        raise TemplateError(f"bad escape \\{e}{digits} in a string")
    code = int(digits, 16)
    if code > 0x10FFFF:
        raise TemplateError(f"bad escape \\{e}{digits} in a string")
    out.append(chr(code))
    return i + 2 + n


def actions(source: str) -> Iterator[tuple[str, list[Tok] | None, str]]:
    """(text before, the action's tokens or None for a comment, the action's source)."""
    pos, text = 0, ""
    while True:
        start = source.find("{{", pos)
        if start < 0:
            yield source[pos:] + text, [], ""
            return
        chunk = source[pos:start]
        i = start + 2
        if source.startswith("-", i) and i + 1 < len(source) and source[i + 1] in SPACE:
            chunk = chunk.rstrip(SPACE)
            i += 2
        toks: list[Tok] | None
        if source.startswith("/*", i):
            i, trim = _comment(source, i)
            toks = None
        else:
            toks, i, trim = _lex(source, i)
        act = source[start:i]
        if trim:
            while i < len(source) and source[i] in SPACE:
                i += 1
        yield chunk, toks, act
        pos = i


def _comment(source: str, i: int) -> tuple[int, bool]:
    """Where the comment opening at ``i`` ends, and whether it trims the space after it."""
    end = source.find("*/", i + 2)
    if end < 0:
        raise TemplateError("unclosed comment")
    i = end + 2
    if re.match(r"[ \t\r\n]-}}", source[i:]):
        return i + 4, True
    if source.startswith("}}", i):
        return i + 2, False
    raise TemplateError("comment ends before closing delimiter")


def _lex(source: str, i: int) -> tuple[list[Tok], int, bool]:
    toks: list[Tok] = []
    while True:
        if i >= len(source):
            raise TemplateError("unclosed action: {{ without }}")
        m = re.match(r"[ \t\r\n]+-}}", source[i:])
        if m:
            return toks, i + m.end(), True
        if source.startswith("}}", i):
            return toks, i + 2, False
        m = _TOKEN.match(source, i)
        if m is None or m.lastgroup is None:
            raise TemplateError(
                _UNTERMINATED.get(source[i], f"unexpected {source[i]!r} in an action")
            )
        if m.lastgroup != "space":
            toks.append(Tok(m.lastgroup, m.group()))
        i = m.end()


def number(text: str) -> object:
    """A number constant's value: an int of at most 64 bits, or a float64."""
    clean = text.replace("_", "")
    try:
        if re.fullmatch(r"[+-]?0[xXoObB].*", clean):
            value = int(clean, 0)
        elif re.fullmatch(r"[+-]?[0-9]+", clean):
            value = int(clean, 8) if re.fullmatch(r"[+-]?0[0-7]+", clean) else int(clean)
        else:
            return _float_constant(clean)
        if -(2**63) <= value < 2**64:
            return value
        if re.match(r"[+-]?0[0-9xXoObB]", clean):  # past 64 bits: Go has no float for it
            raise ValueError(clean)
        return _float_constant(clean)
    except ValueError as err:
        raise TemplateError(f"bad number syntax: {_cut(text)}") from err


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _float_constant(clean: str) -> float:
    """A constant Go reads as a float64 (a decimal integer past 64 bits too, so no constant
    prints thousands of digits, N3); one past its range is refused."""
    value = float(clean)
    if value in (float("inf"), float("-inf")):
        raise ValueError(clean)
    return value
