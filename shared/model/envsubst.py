"""Flux's ``postBuild`` variable substitution, the part this product relies on (P2's render).

A Flux Kustomization with ``spec.postBuild.substitute``/``substituteFrom`` renders its folder
and then replaces variables in the text of every object before applying it. Of that syntax
this module renders exactly three forms:

- ``${NAME}``: the variable's value;
- ``${NAME:=DEFAULT}``: the value when it is set and not empty, else ``DEFAULT`` (literal text,
  without ``$``, ``{`` or ``}``);
- ``$$``: a literal ``$`` (how a manifest keeps ``${...}`` out of the substitution).

``NAME`` is ``[_a-zA-Z][_a-zA-Z0-9]*``. Anything else with a ``$`` in it (``$NAME`` without
braces, other ``${...}`` operators, a variable that is not set and has no default) is
``Unsupported``: what the applier makes of it is not known here, so a caller never claims a
render it cannot compute (the writer refuses such a write, docs/writing.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NAME = r"[_a-zA-Z][_a-zA-Z0-9]*"
#: One ``$`` construct: ``$$``, ``${NAME}`` or ``${NAME:=DEFAULT}``.
_TOKEN = re.compile(r"\$\$|\$\{(" + NAME + r")(?::=([^${}]*))?\}")


class Unsupported(ValueError):
    """Text with a ``$`` construct this module does not render."""


def substitute(text: str, values: Mapping[str, str]) -> str:
    """``text`` as the applier renders it with ``values``."""
    out: list[str] = []
    at = 0
    while True:
        dollar = text.find("$", at)
        if dollar < 0:
            out.append(text[at:])
            return "".join(out)
        out.append(text[at:dollar])
        match = _TOKEN.match(text, dollar)
        if match is None:
            snippet = text[dollar : dollar + 24]
            raise Unsupported(f"{snippet!r} is not ${{NAME}}, ${{NAME:=DEFAULT}} or $$")
        token = match.group(0)
        if token == "$$":
            out.append("$")
        else:
            name, default = match.group(1), match.group(2)
            value = values.get(name)
            if value:
                out.append(value)
            elif default is not None:
                out.append(default)
            elif value is not None:
                out.append(value)  # set, empty, no default
            else:
                raise Unsupported(f"${{{name}}} is not set and has no default")
        at = match.end()


def variables(text: str) -> list[str]:
    """The names ``text`` refers to, in order (``$$`` escapes are not references)."""
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


def escape(text: str) -> str:
    """``text`` written so that it renders as itself: every ``$`` doubled."""
    return text.replace("$", "$$")
