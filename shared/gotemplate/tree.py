"""The parsed template: nodes (text, a printed pipeline, ``if``/``range``/``with`` blocks,
``break``/``continue``) and the operands of a pipeline's commands."""

from __future__ import annotations

from dataclasses import dataclass

from shared.gotemplate.show import show


@dataclass
class Field:
    """``.A.B`` from the dot; ``names`` () is the dot itself."""

    names: tuple[str, ...]


@dataclass
class Var:
    """``$x.A.B``: the variable ``name`` and the fields read from it."""

    name: str
    names: tuple[str, ...]


@dataclass
class Lit:
    """A constant: a string, number, character, boolean or ``nil`` (None)."""

    value: object


@dataclass
class Func:
    """A function's name, the head of a command."""

    name: str


@dataclass
class Sub:
    """A parenthesised pipeline, and the fields read from its value."""

    pipe: Pipe
    names: tuple[str, ...]


Arg = Field | Var | Lit | Func | Sub


@dataclass
class Pipe:
    """Commands joined by ``|``, maybe declaring (``:=``) or assigning (``=``) variables."""

    decl: tuple[str, ...]
    assign: bool  # ``=`` rather than ``:=``
    cmds: list[list[Arg]]
    source: str


@dataclass
class Text:
    """Text outside the actions, written as it is."""

    text: str


@dataclass
class Print:
    """An action whose pipeline's value is printed (unless it declares a variable)."""

    pipe: Pipe


@dataclass
class Block:
    """``if``, ``range`` or ``with``: the body, and the ``else`` part in ``other``."""

    kind: str  # if, range, with
    pipe: Pipe
    body: list[Node]
    other: list[Node]  # the else part


@dataclass
class Jump:
    """``break`` or ``continue`` inside a ``range``."""

    kind: str  # break, continue


Node = Text | Print | Block | Jump


def name(arg: Arg) -> str:
    """An operand as the template spells it, for error messages."""
    if isinstance(arg, Field):
        return "." + ".".join(arg.names)
    if isinstance(arg, Var):
        return ".".join((arg.name, *arg.names))
    if isinstance(arg, Lit):
        return show(arg.value)
    if isinstance(arg, Func):
        return arg.name
    return "(...)"
