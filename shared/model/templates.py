"""Commit-message templates (GitProvider ``spec.commit.message``): checked, then rendered within
bounds, so that a tenant's template can fail only its own commits' wording (C1, T4).

A template is Python ``str.format`` text with a closed set of fields: ``operation``, ``kind``,
``namespace``, ``name``, ``path`` for a commit of one write, ``count`` and ``path`` for a
commit of several. A field may carry an alignment and a width of at most two digits
(``{name:>20}``); nothing else: no conversion, attribute, index or other format spec (the CRD's
CEL rule states the same grammar, so the API server refuses what this module refuses). A
rendered message is cut at ``MAX_MESSAGE`` characters: git gets it as one argument, and the
kernel refuses an argument over 128 KiB (E2BIG).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

#: Fields a one-write template may name; a many-writes template's.
EVENT_FIELDS = frozenset({"operation", "kind", "namespace", "name", "path"})
GROUP_FIELDS = frozenset({"count", "path"})
#: The only format spec allowed: an alignment and a width of at most two digits (no leading 0:
#: ``{name:05}`` asks for ``=`` alignment, which a string refuses).
_SPEC = re.compile(r"[<>^]?(?:[1-9][0-9]?)?")
#: Longest message handed to git, in characters.
MAX_MESSAGE = 16 * 1024


class TemplateError(ValueError):
    """A template this product does not render (its message says why, for the user)."""


def check(template: str, fields: frozenset[str]) -> None:
    """TemplateError unless ``template`` names only ``fields``, with at most a width."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:  # a lone brace
        raise TemplateError(f"commit message template {template[:80]!r}: {err}") from err
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in fields:
            allowed = ", ".join(sorted(fields))
            raise TemplateError(
                f"commit message template names {{{field[:40]}}}; it may name only {allowed}"
            )
        if conversion or not _SPEC.fullmatch(spec or ""):
            raise TemplateError(
                f"commit message template field {{{field}}}: only an alignment and a width up"
                f" to 99 are allowed (e.g. {{{field}:>20}})"
            )


def render(template: str, fields: frozenset[str], values: Mapping[str, object]) -> str:
    """The message: ``template`` checked and filled in, no NUL, at most ``MAX_MESSAGE`` long."""
    check(template, fields)
    try:
        text = template.format_map({key: values[key] for key in fields})
    except (ValueError, TypeError) as err:  # check() admits nothing that fails; belt and braces
        raise TemplateError(f"commit message template {template[:80]!r}: {err}") from err
    return text.replace("\0", "")[:MAX_MESSAGE]
