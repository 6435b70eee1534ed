"""The static field check: every branch of a template walked with the data's ``Shape``, taken
or not, so a field the data lacks is found even where the sample data would not take the
branch (Go's ``missingkey=error`` at admission rather than at commit time)."""

from __future__ import annotations

from shared.gotemplate.functions import arity
from shared.gotemplate.tree import Arg, Block, Field, Func, Lit, Node, Pipe, Print, Sub, Var, name
from shared.gotemplate.values import ANY, BOOL, INT, STRING, Shape, TemplateError

_RESULTS = {"len": INT, "print": STRING, "printf": STRING, "println": STRING}


class Check:
    """Walks every branch with the data's shape: a field the shape lacks is an error."""

    def __init__(self, root: Shape) -> None:
        self.vars: list[tuple[str, Shape]] = [("$", root)]

    def nodes(self, nodes: list[Node], dot: Shape) -> None:
        for node in nodes:
            if isinstance(node, Print):
                self.pipe(node.pipe, dot)
            elif isinstance(node, Block):
                self.block(node, dot)

    def block(self, node: Block, dot: Shape) -> None:
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

    def lookup(self, var: str) -> Shape:
        for have, shape in reversed(self.vars):
            if have == var:
                return shape
        return ANY

    def pipe(self, pipe: Pipe, dot: Shape, ranged: bool = False) -> Shape:
        shape = ANY
        for i, cmd in enumerate(pipe.cmds):
            shape = self.command(cmd, dot, i > 0)
        if pipe.decl and not pipe.assign and not ranged:
            self.vars.append((pipe.decl[0], shape))
        if pipe.assign:
            self.vars.append((pipe.decl[0], ANY))  # assigned in a branch: could be either
        return shape

    def command(self, cmd: list[Arg], dot: Shape, piped: bool) -> Shape:
        head = cmd[0]
        if not isinstance(head, Func):
            if piped:
                raise TemplateError(f"can't give argument to non-function {name(head)}")
            return self.arg(head, dot)
        shapes = [self.arg(a, dot) for a in cmd[1:]]
        arity(head.name, len(shapes) + piped)
        if head.name == "index" and shapes:
            shape = shapes[0]
            for _ in shapes[1:]:
                shape = (shape.elem or ANY) if shape.kind in ("list", "map") else ANY
            return shape
        if head.name in ("eq", "ne", "lt", "le", "gt", "ge", "not"):
            return BOOL
        return _RESULTS.get(head.name, ANY)

    def arg(self, arg: Arg, dot: Shape) -> Shape:
        if isinstance(arg, Field):
            return self.chain(dot, arg.names)
        if isinstance(arg, Var):
            return self.chain(self.lookup(arg.name), arg.names)
        if isinstance(arg, Sub):
            return self.chain(self.pipe(arg.pipe, dot), arg.names)
        if isinstance(arg, Lit):
            value = arg.value
            return STRING if isinstance(value, str) else BOOL if isinstance(value, bool) else ANY
        return ANY

    def chain(self, shape: Shape, names: tuple[str, ...]) -> Shape:
        for field in names:
            shape = _field(shape, field)
        return shape


def _field(shape: Shape, field: str) -> Shape:
    """The shape of ``field`` read from a value of ``shape``; an error if it has none."""
    if shape.kind == "record":
        if field not in shape.fields:
            have = ", ".join(shape.fields)
            raise TemplateError(
                f"can't evaluate field {field} in type {shape.name}: the fields are {have}"
            )
        return shape.fields[field]
    if shape.kind == "map":
        if field not in shape.keys:
            raise TemplateError(
                f'map {shape.name} has no entry for key "{field}" (it may have'
                f" {', '.join(sorted(shape.keys))})"
            )
        return shape.elem or ANY
    if shape.kind != "any":
        raise TemplateError(f"can't evaluate field {field} in type {shape.kind}")
    return shape
