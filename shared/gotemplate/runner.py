"""Running a parsed template on data, as Go's ``text/template`` executes it with
``missingkey=error``, within the bounds (``bounds``): at most ``MAX_STEPS`` steps, the output
cut at its limit (a long value printed piece by piece, never whole), and every value ``print``,
``printf`` or ``println`` makes refused before it passes ``MAX_VALUE`` characters or the run's
values pass ``MAX_RUN`` together (N3)."""

from __future__ import annotations

from collections.abc import Callable

from shared.gotemplate.bounds import MAX_RUN, MAX_STEPS, MAX_VALUE, too_long
from shared.gotemplate.functions import PURE, arity, field, truth
from shared.gotemplate.printf import sprint, sprintf, sprintln
from shared.gotemplate.show import brief, parts
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
)
from shared.gotemplate.values import Record, TemplateError


class Full(Exception):
    """The output reached its limit."""


class _Break(Exception):
    """``{{break}}``: leaves the innermost ``range``."""


class _Continue(Exception):
    """``{{continue}}``: goes on with the innermost ``range``'s next item."""


class Run:
    """One run of a template: its output so far, its variables and what it has spent."""

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
            raise Full
        self.out.append(text)
        self.size += len(text)

    def nodes(self, nodes: list[Node], dot: object) -> None:
        for node in nodes:
            self.step()
            if isinstance(node, Text):
                self.write(node.text)
            elif isinstance(node, Print):
                value = self.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    self.show(value)
            elif isinstance(node, Jump):
                raise _Break if node.kind == "break" else _Continue
            else:
                self.block(node, dot)

    def show(self, value: object) -> None:
        """A printed value; a long one stops at the limit, never built whole. Nil prints as
        Go prints a missing value, ``<no value>`` (``<nil>`` inside a list or a struct)."""
        if value is None:
            self.write("<no value>")
            return
        for part in parts(value):
            self.write(part)

    def scoped(self, nodes: list[Node], dot: object) -> None:
        mark = len(self.vars)
        try:
            self.nodes(nodes, dot)
        finally:
            del self.vars[mark:]

    def block(self, node: Block, dot: object) -> None:
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

    def loop(self, node: Block, value: object, dot: object) -> None:
        items: list[tuple[object, object]]
        if value is None:
            items = []
        elif isinstance(value, Record) or not isinstance(value, list | tuple | dict):
            raise TemplateError(f"range can't iterate over {brief(value)}")
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

    def pipe(self, pipe: Pipe, dot: object, ranged: bool = False) -> object:
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
            value = field(value, name)
        return value

    def arg(self, arg: Arg, dot: object) -> object:
        self.step()
        if isinstance(arg, Field):
            return self.chain(dot, arg.names)
        if isinstance(arg, Var):
            return self.chain(self.lookup(arg.name), arg.names)
        if isinstance(arg, Lit):
            return arg.value
        if isinstance(arg, Sub):
            return self.chain(self.pipe(arg.pipe, dot), arg.names)
        return self.call(arg.name, [])  # Go calls a function named as an argument

    def command(self, cmd: list[Arg], dot: object, last: object, piped: bool) -> object:
        head = cmd[0]
        if not isinstance(head, Func):
            if len(cmd) > 1 or piped:
                raise TemplateError("can't give argument to non-function")
            if isinstance(head, Lit) and head.value is None:
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
        refusal = too_long(name, room)
        if room < MAX_VALUE:
            refusal = f"{name}: the values this run made add up to over {MAX_RUN} characters"
        if name == "print":
            text = sprint(args, room, refusal)
        elif name == "println":
            text = sprintln(args, room, refusal)
        elif isinstance(args[0], str):
            text = sprintf(args[0], args[1:], room, refusal)
        else:
            raise TemplateError(f"expected string; found {brief(args[0])}")
        self.made += len(text)
        return text

    def thunk(self, arg: Arg, dot: object) -> Callable[[], object]:
        return lambda: self.arg(arg, dot)

    def call(self, name: str, thunks: list[Callable[[], object]]) -> object:
        arity(name, len(thunks))
        if name in ("and", "or"):
            value: object = None
            for thunk in thunks:
                value = thunk()
                if truth(value) is (name == "or"):
                    return value
            return value
        args = [thunk() for thunk in thunks]
        if name in ("print", "println", "printf"):
            return self.make(name, args)
        function = PURE.get(name)
        if function is None:  # pragma: no cover - the parser admits only FUNCTIONS
            raise TemplateError(f'function "{name}" not defined')
        return function(args)
