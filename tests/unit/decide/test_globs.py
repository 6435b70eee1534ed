"""allowedBranches globs behave like Go's ``filepath.Match`` (facts/upstream-gitops-reverser.md
§2.1 "Glob patterns (Go filepath.Match)"; syntax from go.googlesource.com/go
src/path/filepath/match.go: ``*`` and ``?`` never match the separator, ``[^...]`` negates,
``\\`` escapes, a malformed pattern is ErrBadPattern)."""

from __future__ import annotations

import pytest

from shared.decide.globs import BadPattern, branch_allowed, glob_match, translate


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("main", "main", True),
        ("main", "mainline", False),
        ("*", "main", True),
        ("*", "env/prod", False),  # * stops at /
        ("env/*", "env/prod", True),
        ("env/*", "env/prod/eu", False),
        ("env/*/*", "env/prod/eu", True),
        ("release-?", "release-1", True),
        ("release-?", "release-10", False),
        ("v[0-9].x", "v7.x", True),
        ("v[^0-9].x", "v7.x", False),
        ("v[^0-9].x", "vA.x", True),
        ("v[!0-9].x", "v!.x", True),  # ! is a plain character in Go, not a negation
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("[", "[", False),  # malformed: matches nothing
        ("a[]b", "a]b", False),  # Go refuses an empty class
        ("feat/[a-c]*", "feat/beta", True),
    ],
)
def test_go_filepath_match_semantics(pattern: str, name: str, expected: bool) -> None:
    assert glob_match(pattern, name) is expected


@pytest.mark.parametrize("pattern", ["[", "a[", "x\\", "[a-", "[]"])
def test_malformed_patterns_raise_bad_pattern(pattern: str) -> None:
    with pytest.raises(BadPattern):
        translate(pattern)


def test_any_allowed_pattern_is_enough() -> None:
    assert branch_allowed("env/prod", ["main", "env/*"])
    assert not branch_allowed("feature/x", ["main", "env/*"])
    assert not branch_allowed("main", [])
