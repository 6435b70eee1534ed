"""A bounded subset of Go's ``text/template``, so commit-message templates written for the Go
operator carry over (issue 15, part 5). Written here from the language's documented behaviour.

What it takes: text and actions ``{{ }}`` with trim markers (``{{- `` and `` -}}``) and comments
(``{{/* */}}``); fields ``.A.B``, the dot, variables (``$``, ``$x := p``, ``$x = p``, ``$x.A``),
string, raw-string, number, character, ``true``/``false`` and parenthesised pipelines;
pipelines ``a | b``; ``if``/``else if``/``else``, ``range`` (lists, and maps in sorted key order,
with ``$v :=`` or ``$k, $v :=``, ``else``, ``break``, ``continue``), ``with``/``else with``; the
functions ``len``, ``index``, ``printf``, ``print``, ``println``, ``eq``, ``ne``, ``lt``, ``le``,
``gt``, ``ge``, ``and``, ``or``, ``not``. What it refuses, with a reason: ``define``,
``template`` and ``block`` (no template calls, so no recursion), any other function, and
ranging over anything but a list or a map (no ``range 1000000000``).

Every problem is a ``TemplateError``. Execution follows ``missingkey=error``: a field the data
does not have is an error, never ``<no value>``. Bounds: the output stops at ``limit``
characters, a run takes at most ``MAX_STEPS`` steps, a printf width or precision at most
``MAX_WIDTH``, and a template at most ``MAX_SOURCE`` characters, so any template finishes soon
with a short text or an error. The output is not the only thing to bound: a variable keeps a
value, and ``{{$x = print $x $x}}`` doubles it in one step (the 2026-12-06 probe, N3), so every
value a run makes (``print``, ``printf``, ``println``) is measured before it is built: one may
have at most ``MAX_VALUE`` characters and all of a run's at most ``MAX_RUN`` together; a value
printed is written piece by piece up to the output's limit; an integer constant must fit Go's
64 bits.

Data is plain Python: ``str``, ``int``, ``bool``, ``float``, ``None``, lists, ``GoMap`` (a map,
printed ``map[k:v]``) and ``Record`` (a struct: its fields are fixed, printed ``{v1 v2}``).
``check_fields`` is a static pass over every branch against a ``Shape`` of the data, so an
unknown field is found even where the sample data would not take the branch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

MAX_STEPS = 200_000
MAX_WIDTH = 1000
MAX_SOURCE = 64 * 1024
#: Characters one value a run makes may have, and all the values of one run together (N3).
MAX_VALUE = 64 * 1024
MAX_RUN = 1024 * 1024
FUNCTIONS = (
    "and", "eq", "ge", "gt", "index", "le", "len", "lt", "ne", "not", "or", "print", "printf",
    "println",
)  # fmt: skip
_REFUSED = ("define", "template", "block")


class TemplateError(ValueError):
    """A template that does not parse, names what the data lacks, or fails while running."""


class GoMap(dict[str, object]):
    """A Go map: ranged in sorted key order; ``zero`` is what ``index`` gives for a key it
    lacks, and a field in ``zero_keys`` reads as ``zero`` when absent (not an error)."""

    zero: object = None
    zero_keys: frozenset[str] = frozenset()


class Record(dict[str, object]):
    """A Go struct: a field it lacks is always an error; printed ``{v1 v2 ...}``."""

    type_name: str = "struct"


# --- the data's shape, for the static field check -----------------------------------------


@dataclass(frozen=True)
class Shape:
    """What a value is: ``kind`` one of any, string, int, bool, list, map, record."""

    kind: str
    fields: Mapping[str, Shape] = field(default_factory=dict)  # a record's fields
    elem: Shape | None = None  # a list's element, a map's value
    keys: frozenset[str] = frozenset()  # a map's keys that may be read as fields
    name: str = ""


ANY = Shape("any")
STRING, INT, BOOL = Shape("string"), Shape("int"), Shape("bool")


# --- lexing ---------------------------------------------------------------------------------

_SPACE = " \t\r\n"
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


def _unquote(text: str) -> str:
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
            n = {"x": 2, "u": 4, "U": 8}[e]
            digits = text[i + 2 : i + 2 + n]
            if len(digits) != n or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise TemplateError(f"bad escape \\{e}{digits} in a string")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise TemplateError(f"bad escape \\{e}{digits} in a string")
            out.append(chr(code))
            i += 2 + n
        elif e in "01234567":
            digits = text[i + 1 : i + 4]
            if not re.fullmatch(r"[0-7]{3}", digits):
                raise TemplateError(f"bad escape \\{digits} in a string")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise TemplateError(f"unknown escape \\{e} in a string")
    return "".join(out)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str


# --- the tree -------------------------------------------------------------------------------


@dataclass
class _Field:
    names: tuple[str, ...]  # .A.B from the dot; () is the dot itself


@dataclass
class _Var:
    name: str
    names: tuple[str, ...]


@dataclass
class _Lit:
    value: object


@dataclass
class _Func:
    name: str


@dataclass
class _Sub:
    pipe: _Pipe
    names: tuple[str, ...]


_Arg = _Field | _Var | _Lit | _Func | _Sub


@dataclass
class _Pipe:
    decl: tuple[str, ...]
    assign: bool  # ``=`` rather than ``:=``
    cmds: list[list[_Arg]]
    source: str


@dataclass
class _Text:
    text: str


@dataclass
class _Print:
    pipe: _Pipe


@dataclass
class _Block:
    kind: str  # if, range, with
    pipe: _Pipe
    body: list[_Node]
    other: list[_Node]  # the else part


@dataclass
class _Jump:
    kind: str  # break, continue


_Node = _Text | _Print | _Block | _Jump


def _actions(source: str) -> Iterator[tuple[str, list[_Tok] | None, str]]:
    """(text before, the action's tokens or None for a comment, the action's source)."""
    pos, text = 0, ""
    while True:
        start = source.find("{{", pos)
        if start < 0:
            yield source[pos:] + text, [], ""
            return
        chunk = source[pos:start]
        i = start + 2
        if source.startswith("-", i) and i + 1 < len(source) and source[i + 1] in _SPACE:
            chunk = chunk.rstrip(_SPACE)
            i += 2
        toks: list[_Tok] | None
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                raise TemplateError("unclosed comment")
            i = end + 2
            trim = False
            if re.match(r"[ \t\r\n]-}}", source[i:]):
                trim, i = True, i + 4
            elif source.startswith("}}", i):
                i += 2
            else:
                raise TemplateError("comment ends before closing delimiter")
            toks = None
        else:
            toks, i, trim = _lex(source, i)
        act = source[start:i]
        if trim:
            while i < len(source) and source[i] in _SPACE:
                i += 1
        yield chunk, toks, act
        pos = i


def _lex(source: str, i: int) -> tuple[list[_Tok], int, bool]:
    toks: list[_Tok] = []
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
            raise TemplateError(f"unexpected {source[i]!r} in an action")
        if m.lastgroup != "space":
            toks.append(_Tok(m.lastgroup, m.group()))
        i = m.end()


def _number(text: str) -> object:
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


class _Parser:
    def __init__(self, source: str) -> None:
        if len(source) > MAX_SOURCE:
            raise TemplateError(f"template is longer than {MAX_SOURCE} characters")
        self.items = list(_actions(source))
        self.at = 0
        self.scopes: list[set[str]] = [{"$"}]
        self.loops = 0
        self.pending: list[_Tok] = []

    def parse(self) -> list[_Node]:
        nodes, stop = self._list()
        if stop is not None:
            raise TemplateError(f"unexpected {{{{{stop}}}}}")
        return nodes

    def _list(self) -> tuple[list[_Node], str | None]:
        """Nodes up to an ``end`` or ``else`` (returned as the stop word) or the end."""
        nodes: list[_Node] = []
        while self.at < len(self.items):
            text, toks, act = self.items[self.at]
            self.at += 1
            if text:
                nodes.append(_Text(text))
            if toks is None or not act:
                continue
            if not toks:
                raise TemplateError("missing value for command: {{}}")
            head = toks[0]
            word = head.text if head.kind == "ident" else ""
            if word in _REFUSED:
                raise TemplateError(
                    f"{{{{{word}}}}} is refused: commit message templates may not define or"
                    " call templates"
                )
            if word in ("end", "else"):
                self.pending = toks[1:]
                return nodes, word
            if word in ("if", "range", "with"):
                nodes.append(self._block(word, toks[1:], act))
            elif word in ("break", "continue"):
                if not self.loops:
                    raise TemplateError(f"{{{{{word}}}}} outside {{{{range}}}}")
                if len(toks) > 1:
                    raise TemplateError(f"unexpected {toks[1].text} in {{{{{word}}}}}")
                nodes.append(_Jump(word))
            else:
                nodes.append(_Print(self._pipe(toks, act, decl_ok=True)))
        return nodes, None

    def _block(self, kind: str, toks: list[_Tok], act: str) -> _Block:
        if not toks:
            raise TemplateError(f"missing value for {kind}")
        self.scopes.append(set())
        try:
            return self._block_in(kind, toks, act)
        finally:
            self.scopes.pop()

    def _block_in(self, kind: str, toks: list[_Tok], act: str) -> _Block:
        pipe = self._pipe(toks, act, decl_ok=True, pair_ok=kind == "range")
        self.scopes.append(set())
        self.loops += kind == "range"
        body, stop = self._list()
        self.loops -= kind == "range"
        self.scopes.pop()
        other: list[_Node] = []
        if stop is None:
            raise TemplateError(f"unexpected EOF: {{{{{kind}}}}} without {{{{end}}}}")
        if stop == "else":
            rest = self.pending
            if rest and rest[0].kind == "ident" and rest[0].text in ("if", "with"):
                if rest[0].text != kind or kind == "range":
                    raise TemplateError(f"{{{{else {rest[0].text}}}}} inside {{{{{kind}}}}}")
                other = [self._block(kind, rest[1:], act)]  # it consumed the {{end}}
                return _Block(kind, pipe, body, other)
            if rest:
                raise TemplateError(f"unexpected {rest[0].text} in {{{{else}}}}")
            self.scopes.append(set())
            other, stop = self._list()
            self.scopes.pop()
            if stop != "end":
                raise TemplateError(f"{{{{{kind}}}}}: expected {{{{end}}}} after {{{{else}}}}")
        if self.pending:
            raise TemplateError(f"unexpected {self.pending[0].text} in {{{{end}}}}")
        return _Block(kind, pipe, body, other)

    def _pipe(
        self, toks: list[_Tok], act: str, *, decl_ok: bool = False, pair_ok: bool = False
    ) -> _Pipe:
        decl: list[str] = []
        assign = False
        names = [t.text for t in toks]
        if decl_ok and toks and toks[0].kind == "var" and "." not in toks[0].text:
            if len(toks) > 1 and toks[1].kind in ("declare", "assign"):
                decl, assign, toks = [toks[0].text], toks[1].kind == "assign", toks[2:]
            elif (
                pair_ok and len(toks) > 3 and names[1] == "," and toks[2].kind == "var"
                and toks[3].kind == "declare" and "." not in toks[2].text
            ):  # fmt: skip
                decl, toks = [toks[0].text, toks[2].text], toks[4:]
        if assign:
            self._known(decl[0])
        cmds = self._cmds(toks)
        if not assign:
            self.scopes[-1].update(decl)
        if decl == ["$"]:
            raise TemplateError("cannot declare $")
        return _Pipe(tuple(decl), assign, cmds, act)

    def _known(self, name: str) -> None:
        if not any(name in scope for scope in self.scopes):
            raise TemplateError(f'undefined variable "{name}"')

    def _cmds(self, toks: list[_Tok]) -> list[list[_Arg]]:
        cmds: list[list[_Arg]] = [[]]
        i = 0
        while i < len(toks):
            tok = toks[i]
            i += 1
            if tok.text == "|" and tok.kind == "punct":
                if not cmds[-1]:
                    raise TemplateError("missing command before |")
                cmds.append([])
                continue
            if tok.kind == "punct" and tok.text == "(":
                depth, j = 1, i
                while j < len(toks) and depth:
                    depth += {"(": 1, ")": -1}.get(
                        toks[j].text if toks[j].kind == "punct" else "", 0
                    )
                    j += 1
                if depth:
                    raise TemplateError("unclosed left paren")
                inner = toks[i : j - 1]
                if not inner:
                    raise TemplateError("missing command in ()")
                names: tuple[str, ...] = ()
                if j < len(toks) and toks[j].kind == "field":
                    names, j = tuple(toks[j].text[1:].split(".")), j + 1
                cmds[-1].append(_Sub(_Pipe((), False, self._cmds(inner), ""), names))
                i = j
                continue
            cmds[-1].append(self._operand(tok))
        if not cmds[-1]:
            raise TemplateError("missing command" + (" after |" if len(cmds) > 1 else ""))
        for cmd in cmds:
            if len(cmd) > 1 and not isinstance(cmd[0], _Func):
                raise TemplateError(f"can't give argument to non-function {_name(cmd[0])}")
        return cmds

    def _operand(self, tok: _Tok) -> _Arg:  # noqa: C901, PLR0912 - one branch per token kind
        kind, text = tok.kind, tok.text
        if kind == "field":
            return _Field(tuple(text[1:].split(".")))
        if kind == "dot":
            return _Field(())
        if kind == "var":
            name, *rest = text.split(".")
            self._known(name)
            return _Var(name, tuple(rest))
        if kind == "str":
            return _Lit(_unquote(text[1:-1]))
        if kind == "raw":
            return _Lit(text[1:-1])
        if kind == "char":
            body = _unquote(text[1:-1])
            if len(body) != 1:
                raise TemplateError(f"malformed character constant: {text}")
            return _Lit(ord(body))
        if kind == "num":
            return _Lit(_number(text))
        if kind == "ident":
            if text in ("true", "false"):
                return _Lit(text == "true")
            if text == "nil":
                return _Lit(None)
            if text in FUNCTIONS:
                return _Func(text)
            if text in _REFUSED:
                raise TemplateError(f"{{{{{text}}}}} is refused")
            raise TemplateError(
                f'function "{text}" not defined (the functions are {", ".join(FUNCTIONS)})'
            )
        raise TemplateError(f"unexpected {text!r} in an action")


def _name(arg: _Arg) -> str:
    if isinstance(arg, _Field):
        return "." + ".".join(arg.names)
    if isinstance(arg, _Var):
        return ".".join((arg.name, *arg.names))
    if isinstance(arg, _Lit):
        return show(arg.value)
    if isinstance(arg, _Func):
        return arg.name
    return "(...)"


# --- formatting ------------------------------------------------------------------------------


def _go_type(value: object) -> str:
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
    text = repr(value)
    if text.endswith(".0"):
        text = text[:-2]
    if "e" in text:
        mant, exp = text.split("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        text = f"{mant}e{sign}{exp.lstrip('+-').zfill(2)}"
    return text


def show(value: object) -> str:
    """``value`` as Go's ``%v`` prints it."""
    return "".join(_parts(value))


def _parts(value: object) -> Iterator[str]:
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
            yield from _parts(item)
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
    for part in _parts(value):
        total += len(part)
        if total > cap:
            break
    return total


class _Pieces:
    """A text a run makes, built piece by piece and refused (``TemplateError`` ``refusal``) as
    soon as it would pass ``room`` characters (N3), so no value outgrows its bound however its
    pieces repeat."""

    def __init__(self, room: int, refusal: str) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.room = room
        self.refusal = refusal

    def add(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.room:
            raise TemplateError(self.refusal)
        self.parts.append(text)

    def fits(self, value: object) -> None:
        """Refuses ``value`` before it is shown when its text alone passes the room."""
        if measure(value, self.room) > self.room:
            raise TemplateError(self.refusal)

    def shown(self, value: object) -> None:
        self.fits(value)
        self.add(show(value))

    def text(self) -> str:
        return "".join(self.parts)


def _brief(value: object) -> str:
    """``value`` shown for an error message: at most 80 characters."""
    if measure(value, 80) <= 80:
        return show(value)
    return f"a {_go_type(value)} of over 80 characters"


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


_VERB = re.compile(r"%([-+# 0]*)([0-9]+)?(?:\.([0-9]*))?(.?)", re.S)


def _pad(text: str, flags: str, width: int | None, numeric: bool) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags and numeric:
        sign = text[0] if text[:1] in "+-" else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def _verb(  # noqa: C901, PLR0912 - one branch per printf verb
    verb: str, flags: str, width: int | None, prec: int | None, arg: object
) -> str:
    bad = f"%!{verb}({_go_type(arg)}={show(arg)})" if arg is not None else f"%!{verb}(<nil>)"
    is_int = isinstance(arg, int) and not isinstance(arg, bool)
    numeric = False
    if verb == "v":
        text, numeric = show(arg), is_int or isinstance(arg, float)
        if "+" in flags and numeric and not str(text).startswith("-"):
            text = "+" + text
    elif verb == "s":
        if isinstance(arg, str):
            text = arg
        elif isinstance(arg, list | tuple | dict) and all(
            isinstance(v, str) for v in (arg.values() if isinstance(arg, dict) else arg)
        ):
            text = show(arg)
        else:
            return bad
        if prec is not None:
            text = text[:prec]
    elif verb == "q":
        if isinstance(arg, str):
            text = quote(arg if prec is None else arg[:prec])
        elif is_int:
            assert isinstance(arg, int)
            text = "'" + quote(chr(arg) if 0 <= arg <= 0x10FFFF else "\ufffd")[1:-1] + "'"
        else:
            return bad
    elif verb in "dxXob":
        if is_int:
            assert isinstance(arg, int)
            body = format(abs(arg), {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb])
            if prec is not None:
                body = body.rjust(prec, "0")
            sign = "-" if arg < 0 else ("+" if "+" in flags else (" " if " " in flags else ""))
            text, numeric = sign + body, True
        elif verb in "xX" and isinstance(arg, str):
            text = arg.encode().hex()
            text = text.upper() if verb == "X" else text
        else:
            return bad
    elif verb == "t":
        if not isinstance(arg, bool):
            return bad
        text = show(arg)
    elif verb == "c":
        if not is_int:
            return bad
        assert isinstance(arg, int)
        text = chr(arg) if 0 <= arg <= 0x10FFFF else "\ufffd"
    elif verb in "feEgG":
        if not isinstance(arg, float):
            return bad
        text = format(arg, ("+" if "+" in flags else "") + f".{6 if prec is None else prec}{verb}")
        numeric = True
    else:
        return f"%!{verb}(" + (f"{_go_type(arg)}={show(arg)}" if arg is not None else "<nil>") + ")"
    return _pad(text, flags, width, numeric)


def sprintf(fmt: str, args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprintf`` for the verbs v s q d x X o b t c f e g, flags, width, precision;
    a mismatch prints as Go prints it (``%!d(string=x)``, ``%!s(MISSING)``, ``%!(EXTRA ...)``).
    A result longer than ``room`` characters is refused (``refusal``), before it is built."""
    out = _Pieces(room, refusal or _too_long("printf", room))
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
        w = int(width) if width else None
        p = (int(prec) if prec else 0) if prec is not None else None
        if (w or 0) > MAX_WIDTH or (p or 0) > MAX_WIDTH:
            raise TemplateError(f"printf: a width or precision over {MAX_WIDTH} is refused")
        if verb == "%":
            out.add("%")
            continue
        if verb == "":
            out.add("%!(NOVERB)")
            continue
        if used >= len(args):
            out.add(f"%!{verb}(MISSING)")
            continue
        out.fits(args[used])  # so a verb's text (at most ten times its argument's) is bounded
        out.add(_verb(verb, flags, w, p, args[used]))
        used += 1
    if used < len(args):
        out.add("%!(EXTRA ")
        for i, arg in enumerate(args[used:]):
            out.add((", " if i else "") + (f"{_go_type(arg)}=" if arg is not None else ""))
            out.shown(arg)
        out.add(")")
    return out.text()


def sprint(args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprint``: a space between two operands when neither is a string; a result
    longer than ``room`` characters is refused (``refusal``), before it is built."""
    out = _Pieces(room, refusal or _too_long("print", room))
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.add(" ")
        out.shown(arg)
    return out.text()


def sprintln(args: Sequence[object], room: int = MAX_VALUE, refusal: str = "") -> str:
    """Go's ``fmt.Sprintln``: the operands shown, a space between each, and a newline."""
    out = _Pieces(room, refusal or _too_long("println", room))
    for i, arg in enumerate(args):
        if i:
            out.add(" ")
        out.shown(arg)
    out.add("\n")
    return out.text()


def _too_long(name: str, room: int) -> str:
    return (
        f"{name} would make a value of over {room} characters (a value a template makes may"
        f" have at most {MAX_VALUE})"
    )


# --- execution -------------------------------------------------------------------------------


class _Full(Exception):
    """The output reached its limit."""


class _Break(Exception):
    """``{{break}}``: leaves the innermost ``range``."""


class _Continue(Exception):
    """``{{continue}}``: goes on with the innermost ``range``'s next item."""


def truth(value: object) -> bool:
    """Go's template truth: false, 0, nil and empty values are false; a struct is true."""
    if isinstance(value, Record):
        return True
    return bool(value)


def _field(value: object, name: str) -> object:
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
    raise TemplateError(f"can't evaluate field {name} in type {_go_type(value)}")


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _equal(a: object, b: object) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka == "other" or kb == "other":
        if a is None or b is None:
            return a is b
        raise TemplateError(f"non-comparable type {_go_type(a if ka == 'other' else b)}")
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
                raise TemplateError(f"cannot index slice/array with type {_go_type(key)}")
            size = len(item.encode()) if isinstance(item, str) else len(item)
            if not 0 <= key < size:
                raise TemplateError(f"index out of range: {key}")
            item = item.encode()[key] if isinstance(item, str) else item[key]
        elif isinstance(item, dict) and not isinstance(item, Record):
            if not isinstance(key, str):
                raise TemplateError(f"value has type {_go_type(key)}; should be string")
            item = item.get(key, item.zero if isinstance(item, GoMap) else None)
        elif item is None:
            raise TemplateError("index of untyped nil")
        else:
            raise TemplateError(f"can't index item of type {_go_type(item)}")
    return item


def _length(value: object) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, list | tuple | dict) and not isinstance(value, Record):
        return len(value)
    raise TemplateError(f"len of type {_go_type(value)}")


def _arity(name: str, n: int) -> None:
    wanted = {"len": (1, 1), "not": (1, 1), "index": (1, None), "printf": (1, None),
              "ne": (2, 2), "lt": (2, 2), "le": (2, 2), "gt": (2, 2), "ge": (2, 2),
              "eq": (2, None), "and": (1, None), "or": (1, None)}.get(name)  # fmt: skip
    if wanted is None:
        return
    low, high = wanted
    if n < low or (high is not None and n > high):
        want = f"{low}" if low == high else f"at least {low}"
        raise TemplateError(f"wrong number of args for {name}: want {want} got {n}")


class _Run:
    def __init__(self, data: object, limit: int) -> None:
        self.out: list[str] = []
        self.size = 0
        self.limit = limit
        self.steps = 0
        self.made = 0  # characters of the values this run made (N3: at most MAX_RUN)
        self.vars: list[tuple[str, object]] = [("$", data)]

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateError(f"template runs longer than {MAX_STEPS} steps")

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if len(text) > room:
            self.out.append(text[:room])
            self.size = self.limit
            raise _Full
        self.out.append(text)
        self.size += len(text)

    def nodes(self, nodes: list[_Node], dot: object) -> None:
        for node in nodes:
            self.step()
            if isinstance(node, _Text):
                self.write(node.text)
            elif isinstance(node, _Print):
                value = self.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    for part in _parts(value):  # a long value stops at the limit, never whole
                        self.write(part)
            elif isinstance(node, _Jump):
                raise _Break if node.kind == "break" else _Continue
            else:
                self.block(node, dot)

    def scoped(self, nodes: list[_Node], dot: object) -> None:
        mark = len(self.vars)
        try:
            self.nodes(nodes, dot)
        finally:
            del self.vars[mark:]

    def block(self, node: _Block, dot: object) -> None:
        mark = len(self.vars)
        try:
            value = self.pipe(node.pipe, dot, ranged=node.kind == "range")
            if node.kind == "if":
                self.scoped(node.body if truth(value) else node.other, dot)
            elif node.kind == "with":
                if truth(value):
                    self.scoped(node.body, value)
                else:
                    self.scoped(node.other, dot)
            else:
                self.loop(node, value, dot)
        finally:
            del self.vars[mark:]

    def loop(self, node: _Block, value: object, dot: object) -> None:
        items: list[tuple[object, object]]
        if value is None:
            items = []
        elif isinstance(value, Record) or not isinstance(value, list | tuple | dict):
            raise TemplateError(f"range can't iterate over {_brief(value)}")
        elif isinstance(value, dict):
            items = [(k, value[k]) for k in sorted(value)]
        else:
            items = list(enumerate(value))
        if not items:
            self.scoped(node.other, dot)
            return
        decl = node.pipe.decl
        for key, item in items:
            self.step()
            mark = len(self.vars)
            if len(decl) == 1:
                self.vars.append((decl[0], item))
            elif len(decl) == 2:
                self.vars += [(decl[0], key), (decl[1], item)]
            try:
                self.scoped(node.body, item)
            except _Continue:
                pass
            except _Break:
                break
            finally:
                del self.vars[mark:]

    def lookup(self, name: str) -> object:
        for have, value in reversed(self.vars):
            if have == name:
                return value
        raise TemplateError(f'undefined variable "{name}"')

    def pipe(self, pipe: _Pipe, dot: object, ranged: bool = False) -> object:
        value: object = None
        for i, cmd in enumerate(pipe.cmds):
            value = self.command(cmd, dot, value, piped=i > 0)
        if pipe.assign:
            name = pipe.decl[0]
            for at in range(len(self.vars) - 1, -1, -1):
                if self.vars[at][0] == name:
                    self.vars[at] = (name, value)
                    break
        elif pipe.decl and not ranged:
            self.vars.append((pipe.decl[0], value))
        return value

    def chain(self, value: object, names: tuple[str, ...]) -> object:
        for name in names:
            value = _field(value, name)
        return value

    def arg(self, arg: _Arg, dot: object) -> object:
        self.step()
        if isinstance(arg, _Field):
            return self.chain(dot, arg.names)
        if isinstance(arg, _Var):
            return self.chain(self.lookup(arg.name), arg.names)
        if isinstance(arg, _Lit):
            return arg.value
        if isinstance(arg, _Sub):
            return self.chain(self.pipe(arg.pipe, dot), arg.names)
        raise TemplateError(f"{arg.name} is a function, not a value")

    def command(self, cmd: list[_Arg], dot: object, last: object, piped: bool) -> object:
        head = cmd[0]
        if not isinstance(head, _Func):
            if len(cmd) > 1 or piped:
                raise TemplateError("can't give argument to non-function")
            if isinstance(head, _Lit) and head.value is None:
                raise TemplateError("nil is not a command")
            return self.arg(head, dot)
        args = [self.thunk(a, dot) for a in cmd[1:]]
        if piped:
            args.append(lambda: last)
        return self.call(head.name, args)

    def make(self, name: str, args: list[object]) -> str:
        """The text ``print``, ``println`` or ``printf`` makes, refused before it passes
        MAX_VALUE characters or this run's values pass MAX_RUN together (N3)."""
        room = min(MAX_VALUE, MAX_RUN - self.made)
        refusal = _too_long(name, room)
        if room < MAX_VALUE:
            refusal = f"{name}: the values this run made add up to over {MAX_RUN} characters"
        if name == "print":
            text = sprint(args, room, refusal)
        elif name == "println":
            text = sprintln(args, room, refusal)
        elif isinstance(args[0], str):
            text = sprintf(args[0], args[1:], room, refusal)
        else:
            raise TemplateError(f"printf: the format is a {_go_type(args[0])}, not a string")
        self.made += len(text)
        return text

    def thunk(self, arg: _Arg, dot: object) -> Callable[[], object]:
        return lambda: self.arg(arg, dot)

    def call(self, name: str, thunks: list[Callable[[], object]]) -> object:  # noqa: C901, PLR0912 - one branch per function
        _arity(name, len(thunks))
        if name in ("and", "or"):
            value: object = None
            for thunk in thunks:
                value = thunk()
                if truth(value) is (name == "or"):
                    return value
            return value
        args = [thunk() for thunk in thunks]
        if name == "not":
            return not truth(args[0])
        if name == "len":
            return _length(args[0])
        if name == "index":
            return _index(args[0], args[1:])
        if name in ("print", "println", "printf"):
            return self.make(name, args)
        if name == "eq":
            return any(_equal(args[0], other) for other in args[1:])
        if name == "ne":
            return not _equal(args[0], args[1])
        if name == "lt":
            return _less(args[0], args[1])
        if name == "le":
            return _less(args[0], args[1]) or _equal(args[0], args[1])
        if name == "gt":
            return not (_less(args[0], args[1]) or _equal(args[0], args[1]))
        if name == "ge":
            return not _less(args[0], args[1])
        raise TemplateError(f'function "{name}" not defined')  # pragma: no cover


# --- the static field check ------------------------------------------------------------------

_RESULTS = {"len": INT, "print": STRING, "printf": STRING, "println": STRING}


class _Check:
    """Walks every branch with the data's shape: a field the shape lacks is an error."""

    def __init__(self, root: Shape) -> None:
        self.vars: list[tuple[str, Shape]] = [("$", root)]

    def nodes(self, nodes: list[_Node], dot: Shape) -> None:
        for node in nodes:
            if isinstance(node, _Print):
                self.pipe(node.pipe, dot)
            elif isinstance(node, _Block):
                mark = len(self.vars)
                shape = self.pipe(node.pipe, dot, ranged=node.kind == "range")
                after = len(self.vars)
                inner = dot
                if node.kind == "with":
                    inner = shape
                elif node.kind == "range":
                    inner = self.ranged(shape, node.pipe.decl)
                self.nodes(node.body, inner)
                del self.vars[after:]
                self.nodes(node.other, dot)
                del self.vars[mark:]

    def ranged(self, shape: Shape, decl: tuple[str, ...]) -> Shape:
        if shape.kind in ("list", "map"):
            elem = shape.elem or ANY
            key = INT if shape.kind == "list" else STRING
        elif shape.kind == "any":
            elem, key = ANY, ANY
        else:
            raise TemplateError(f"range can't iterate over a {shape.name or shape.kind}")
        if len(decl) == 1:
            self.vars.append((decl[0], elem))
        elif len(decl) == 2:
            self.vars += [(decl[0], key), (decl[1], elem)]
        return elem

    def lookup(self, name: str) -> Shape:
        for have, shape in reversed(self.vars):
            if have == name:
                return shape
        return ANY

    def pipe(self, pipe: _Pipe, dot: Shape, ranged: bool = False) -> Shape:
        shape = ANY
        for i, cmd in enumerate(pipe.cmds):
            shape = self.command(cmd, dot, i > 0)
        if pipe.decl and not pipe.assign and not ranged:
            self.vars.append((pipe.decl[0], shape))
        if pipe.assign:
            self.vars.append((pipe.decl[0], ANY))  # assigned in a branch: could be either
        return shape

    def command(self, cmd: list[_Arg], dot: Shape, piped: bool) -> Shape:
        head = cmd[0]
        if not isinstance(head, _Func):
            if piped:
                raise TemplateError(f"can't give argument to non-function {_name(head)}")
            return self.arg(head, dot)
        shapes = [self.arg(a, dot) for a in cmd[1:]]
        _arity(head.name, len(shapes) + piped)
        if head.name == "index" and shapes:
            shape = shapes[0]
            for _ in shapes[1:]:
                shape = (shape.elem or ANY) if shape.kind in ("list", "map") else ANY
            return shape
        if head.name in ("eq", "ne", "lt", "le", "gt", "ge", "not"):
            return BOOL
        return _RESULTS.get(head.name, ANY)

    def arg(self, arg: _Arg, dot: Shape) -> Shape:
        if isinstance(arg, _Field):
            return self.chain(dot, arg.names)
        if isinstance(arg, _Var):
            return self.chain(self.lookup(arg.name), arg.names)
        if isinstance(arg, _Sub):
            return self.chain(self.pipe(arg.pipe, dot), arg.names)
        if isinstance(arg, _Lit):
            value = arg.value
            return STRING if isinstance(value, str) else BOOL if isinstance(value, bool) else ANY
        return ANY

    def chain(self, shape: Shape, names: tuple[str, ...]) -> Shape:
        for name in names:
            if shape.kind == "record":
                if name not in shape.fields:
                    have = ", ".join(shape.fields)
                    raise TemplateError(
                        f"can't evaluate field {name} in type {shape.name}: the fields are {have}"
                    )
                shape = shape.fields[name]
            elif shape.kind == "map":
                if name not in shape.keys:
                    raise TemplateError(
                        f'map {shape.name} has no entry for key "{name}" (it may have'
                        f" {', '.join(sorted(shape.keys))})"
                    )
                shape = shape.elem or ANY
            elif shape.kind != "any":
                raise TemplateError(f"can't evaluate field {name} in type {shape.kind}")
        return shape


# --- the interface ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A parsed template."""

    source: str
    tree: list[_Node]

    def check_fields(self, shape: Shape) -> None:
        """TemplateError if any branch names a field ``shape`` lacks (``missingkey=error``)."""
        try:
            _Check(shape).nodes(self.tree, shape)
        except RecursionError as err:
            raise TemplateError("template nests too deeply") from err

    def render(self, data: object, limit: int) -> str:
        """The text for ``data``, cut at ``limit`` characters; TemplateError if it fails."""
        run = _Run(data, limit)
        try:
            run.nodes(self.tree, data)
        except _Full:
            pass
        except RecursionError as err:
            raise TemplateError("template nests too deeply") from err
        return "".join(run.out)


def parse(source: str) -> Template:
    """The template, or TemplateError saying what is wrong with it."""
    try:
        return Template(source, _Parser(source).parse())
    except RecursionError as err:
        raise TemplateError("template nests too deeply") from err
