"""A parsed template and its two uses: the static field check and a run on data. Deep nesting
(thousands of ``{{if}}``) is a ``TemplateError``, not Python's ``RecursionError``."""

from __future__ import annotations

from dataclasses import dataclass

from shared.gotemplate.checks import Check
from shared.gotemplate.parser import Parser
from shared.gotemplate.runner import Full, Run
from shared.gotemplate.tree import Node
from shared.gotemplate.values import Shape, TemplateError


@dataclass(frozen=True)
class Template:
    """A parsed template."""

    source: str
    tree: list[Node]

    def check_fields(self, shape: Shape) -> None:
        """TemplateError if any branch names a field ``shape`` lacks (``missingkey=error``)."""
        try:
            Check(shape).nodes(self.tree, shape)
        except RecursionError as err:
            raise TemplateError("template nests too deeply") from err

    def render(self, data: object, limit: int) -> str:
        """The text for ``data``, cut at ``limit`` characters; TemplateError if it fails."""
        run = Run(data, limit)
        try:
            run.nodes(self.tree, data)
        except Full:
            pass
        except RecursionError as err:
            raise TemplateError("template nests too deeply") from err
        return "".join(run.out)


def parse(source: str) -> Template:
    """The template, or TemplateError saying what is wrong with it."""
    try:
        return Template(source, Parser(source).parse())
    except RecursionError as err:
        raise TemplateError("template nests too deeply") from err
