"""The parser: the lexer's actions into a tree (``tree``), with the scopes of variables (one
not declared is an error, as in Go) and the refusals of the subset: ``define``, ``template``
and ``block`` (no template calls, so no recursion) and any function not in ``FUNCTIONS``."""

from __future__ import annotations

from shared.gotemplate.bounds import MAX_SOURCE
from shared.gotemplate.functions import FUNCTIONS
from shared.gotemplate.lexer import Tok, actions, number, unquote
from shared.gotemplate.tree import (
    Arg,
    Block,
    Field,
    Func,
    Jump,
    Lit,
    Node,
    Pipe,
    Print,
    Sub,
    Text,
    Var,
    name,
)
from shared.gotemplate.values import TemplateError

REFUSED = ("define", "template", "block")


class Parser:
    """One template's source, parsed by ``parse``."""

    def __init__(self, source: str) -> None:
        if len(source) > MAX_SOURCE:
            raise TemplateError(f"template is longer than {MAX_SOURCE} characters")
        self.items = list(actions(source))
        self.at = 0
        self.scopes: list[set[str]] = [{"$"}]
        self.loops = 0
        self.pending: list[Tok] = []

    def parse(self) -> list[Node]:
        nodes, stop = self._list()
        if stop is not None:
            raise TemplateError(f"unexpected {{{{{stop}}}}}")
        return nodes

    def _list(self) -> tuple[list[Node], str | None]:
        """Nodes up to an ``end`` or ``else`` (returned as the stop word) or the end."""
        nodes: list[Node] = []
        while self.at < len(self.items):
            text, toks, act = self.items[self.at]
            self.at += 1
            if text:
                nodes.append(Text(text))
            if toks is None or not act:
                continue
            if not toks:
                raise TemplateError("missing value for command: {{}}")
            head = toks[0]
            word = head.text if head.kind == "ident" else ""
            if word in REFUSED:
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
                nodes.append(self._jump(word, toks))
            else:
                nodes.append(Print(self._pipe(toks, act, decl_ok=True)))
        return nodes, None

    def _jump(self, word: str, toks: list[Tok]) -> Jump:
        if not self.loops:
            raise TemplateError(f"{{{{{word}}}}} outside {{{{range}}}}")
        if len(toks) > 1:
            raise TemplateError(f'unexpected "{toks[1].text}" in {{{{{word}}}}}')
        return Jump(word)

    def _block(self, kind: str, toks: list[Tok], act: str) -> Block:
        if not toks:
            raise TemplateError(f"missing value for {kind}")
        self.scopes.append(set())
        try:
            return self._block_in(kind, toks, act)
        finally:
            self.scopes.pop()

    def _block_in(self, kind: str, toks: list[Tok], act: str) -> Block:
        pipe = self._pipe(toks, act, decl_ok=True, pair_ok=kind == "range")
        self.scopes.append(set())
        self.loops += kind == "range"
        body, stop = self._list()
        self.loops -= kind == "range"
        self.scopes.pop()
        other: list[Node] = []
        if stop is None:
            raise TemplateError(f"unexpected EOF: {{{{{kind}}}}} without {{{{end}}}}")
        if stop == "else":
            rest = self.pending
            if rest and rest[0].kind == "ident" and rest[0].text in ("if", "with"):
                if rest[0].text != kind or kind == "range":
                    raise TemplateError(f"{{{{else {rest[0].text}}}}} inside {{{{{kind}}}}}")
                other = [self._block(kind, rest[1:], act)]  # it consumed the {{end}}
                return Block(kind, pipe, body, other)
            if rest:
                raise TemplateError(f'unexpected "{rest[0].text}" in else')
            self.scopes.append(set())
            other, stop = self._list()
            self.scopes.pop()
            if stop is None:
                raise TemplateError(f"unexpected EOF: {{{{{kind}}}}} without {{{{end}}}}")
            if stop != "end":
                raise TemplateError(f"expected end; found {{{{{stop}}}}}")
        if self.pending:
            raise TemplateError(f'unexpected "{self.pending[0].text}" in end')
        return Block(kind, pipe, body, other)

    def _pipe(
        self, toks: list[Tok], act: str, *, decl_ok: bool = False, pair_ok: bool = False
    ) -> Pipe:
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
            elif pair_ok and len(toks) > 3 and names[1] == "," and names[3] == ",":
                raise TemplateError("too many declarations in range")
        if assign:
            self._known(decl[0])
        cmds = self._cmds(toks)
        if not assign:
            self.scopes[-1].update(decl)
        return Pipe(tuple(decl), assign, cmds, act)

    def _known(self, var: str) -> None:
        if not any(var in scope for scope in self.scopes):
            raise TemplateError(f'undefined variable "{var}"')

    def _cmds(self, toks: list[Tok]) -> list[list[Arg]]:
        cmds: list[list[Arg]] = [[]]
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
                sub, i = self._sub(toks, i)
                cmds[-1].append(sub)
                continue
            cmds[-1].append(self._operand(tok))
        if not cmds[-1]:
            raise TemplateError("missing command" + (" after |" if len(cmds) > 1 else ""))
        for cmd in cmds:
            if len(cmd) > 1 and not isinstance(cmd[0], Func):
                raise TemplateError(f"can't give argument to non-function {name(cmd[0])}")
        return cmds

    def _sub(self, toks: list[Tok], i: int) -> tuple[Sub, int]:
        """The parenthesised pipeline whose ``(`` is before ``i``, and where it ends."""
        depth, j = 1, i
        while j < len(toks) and depth:
            depth += {"(": 1, ")": -1}.get(toks[j].text if toks[j].kind == "punct" else "", 0)
            j += 1
        if depth:
            raise TemplateError("unclosed left paren")
        inner = toks[i : j - 1]
        if not inner:
            raise TemplateError("missing value for parenthesized pipeline")
        names: tuple[str, ...] = ()
        if j < len(toks) and toks[j].kind == "field":
            names, j = tuple(toks[j].text[1:].split(".")), j + 1
        return Sub(Pipe((), False, self._cmds(inner), ""), names), j

    def _operand(self, tok: Tok) -> Arg:
        kind, text = tok.kind, tok.text
        if kind == "field":
            return Field(tuple(text[1:].split(".")))
        if kind == "dot":
            return Field(())
        if kind == "var":
            var, *rest = text.split(".")
            self._known(var)
            return Var(var, tuple(rest))
        if kind == "ident":
            return _ident(text)
        return Lit(_constant(kind, text))


def _ident(text: str) -> Arg:
    """A word in an action: a boolean, ``nil``, or a function the subset has."""
    if text in ("true", "false"):
        return Lit(text == "true")
    if text == "nil":
        return Lit(None)
    if text in FUNCTIONS:
        return Func(text)
    if text in REFUSED:
        raise TemplateError(f"{{{{{text}}}}} is refused")
    raise TemplateError(f'function "{text}" not defined (the functions are {", ".join(FUNCTIONS)})')


def _constant(kind: str, text: str) -> object:
    """The value of a string, raw string, character or number token."""
    if kind == "str":
        return unquote(text[1:-1])
    if kind == "raw":
        return text[1:-1]
    if kind == "char":
        body = unquote(text[1:-1])
        if len(body) != 1:
            raise TemplateError(f"malformed character constant: {text}")
        return ord(body)
    if kind == "num":
        return number(text)
    raise TemplateError(f"unexpected {text!r} in an action")
