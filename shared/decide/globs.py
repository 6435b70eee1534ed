"""Branch globs as GitProvider ``spec.allowedBranches`` spells them: Go's ``filepath.Match``.

The upstream operator matches a GitTarget's branch with Go's ``filepath.Match``
(facts/upstream-gitops-reverser.md §2.1), and users carry their patterns over, so the same
pattern must allow the same branches here. That differs from Python's ``fnmatch``: ``*`` and
``?`` never match ``/`` (``env/*`` allows ``env/prod`` but not ``env/prod/eu``), a class is
negated with ``^`` (not ``!``), ``\\`` escapes, and a malformed pattern matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SEPARATOR = "/"


class BadPattern(ValueError):
    """The pattern is malformed (Go's ``filepath.ErrBadPattern``)."""


def _escaped(pattern: str, i: int) -> tuple[str, int]:
    """One possibly escaped character of a class at ``i``; returns it and the next index."""
    if i >= len(pattern) or pattern[i] in "-]":
        raise BadPattern(pattern)
    if pattern[i] == "\\":
        i += 1
        if i >= len(pattern):
            raise BadPattern(pattern)
    return pattern[i], i + 1


def _class(pattern: str, i: int) -> tuple[str, int]:
    """Translate the class starting after ``[`` at ``i``; returns regex and next index."""
    negated = i < len(pattern) and pattern[i] == "^"
    i += 1 if negated else 0
    ranges: list[str] = []
    count = 0
    while True:
        if i < len(pattern) and pattern[i] == "]" and count > 0:
            break
        lo, i = _escaped(pattern, i)
        hi = lo
        if i < len(pattern) and pattern[i] == "-":
            hi, i = _escaped(pattern, i + 1)
        if lo <= hi:
            ranges.append(f"{re.escape(lo)}-{re.escape(hi)}")
        count += 1
    body = "".join(ranges)
    if not body:
        return (r"[\s\S]" if negated else r"[^\s\S]"), i + 1
    return f"[{'^' if negated else ''}{body}]", i + 1


def translate(pattern: str) -> re.Pattern[str]:
    """A regex equivalent to the Go pattern; raises BadPattern when Go would."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append(f"[^{_SEPARATOR}]*")
        elif char == "?":
            out.append(f"[^{_SEPARATOR}]")
        elif char == "[":
            part, i = _class(pattern, i + 1)
            out.append(part)
            continue
        elif char == "\\":
            i += 1
            if i >= len(pattern):
                raise BadPattern(pattern)
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def glob_match(pattern: str, name: str) -> bool:
    """Go's ``filepath.Match(pattern, name)``; a malformed pattern matches nothing."""
    try:
        return translate(pattern).fullmatch(name) is not None
    except BadPattern:
        return False


def branch_allowed(branch: str, patterns: Iterable[str]) -> bool:
    """Whether any of the GitProvider's ``allowedBranches`` allows ``branch``."""
    return any(glob_match(pattern, branch) for pattern in patterns)
