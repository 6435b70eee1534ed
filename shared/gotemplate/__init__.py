"""A bounded subset of Go's ``text/template``, so commit-message templates written for the Go
operator carry over (issue 15, part 5). Written here from the language's documented behaviour,
and compared with Go's own ``text/template`` by a golden corpus (tests/unit/gotemplate; the
goldens are made by ``scripts/regenerate-gotemplate-goldens``).

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
does not have is an error, never ``<no value>`` (a nil value printed is ``<no value>``, as in
Go). Bounds (``bounds``): the output stops at ``limit`` characters, a run takes at most
``MAX_STEPS`` steps, a printf width or precision at most ``MAX_WIDTH``, and a template at most
``MAX_SOURCE`` characters, so any template finishes soon with a short text or an error. The
output is not the only thing to bound: a variable keeps a value, and ``{{$x = print $x $x}}``
doubles it in one step (the 2026-12-06 probe, N3), so every value a run makes (``print``,
``printf``, ``println``) is measured before it is built: one may have at most ``MAX_VALUE``
characters and all of a run's at most ``MAX_RUN`` together; a value printed is written piece by
piece up to the output's limit; an integer constant must fit Go's 64 bits.

Data is plain Python: ``str``, ``int``, ``bool``, ``float``, ``None``, lists, ``GoMap`` (a map,
printed ``map[k:v]``) and ``Record`` (a struct: its fields are fixed, printed ``{v1 v2}``).
``Template.check_fields`` is a static pass over every branch against a ``Shape`` of the data,
so an unknown field is found even where the sample data would not take the branch.

The modules, in the order a template goes through them: ``lexer`` (text, actions, tokens),
``parser`` (the ``tree``), ``checks`` (the static field check), ``runner`` (a run, with
``functions`` and ``printf``), beside ``values`` (the data and the error), ``show`` (Go's
``%v``) and ``bounds``. The package is pure: no I/O, no clock.
"""

from shared.gotemplate.bounds import MAX_RUN, MAX_SOURCE, MAX_STEPS, MAX_VALUE, MAX_WIDTH
from shared.gotemplate.functions import FUNCTIONS, truth
from shared.gotemplate.printf import sprint, sprintf, sprintln
from shared.gotemplate.show import measure, quote, show
from shared.gotemplate.template import Template, parse
from shared.gotemplate.values import ANY, BOOL, INT, STRING, GoMap, Record, Shape, TemplateError

__all__ = [
    "ANY",
    "BOOL",
    "FUNCTIONS",
    "INT",
    "MAX_RUN",
    "MAX_SOURCE",
    "MAX_STEPS",
    "MAX_VALUE",
    "MAX_WIDTH",
    "STRING",
    "GoMap",
    "Record",
    "Shape",
    "Template",
    "TemplateError",
    "measure",
    "parse",
    "quote",
    "show",
    "sprint",
    "sprintf",
    "sprintln",
    "truth",
]
