"""P4: ``.gittargetignore`` in gitignore syntax, relative to the GitTarget's folder; patterns
that hide every manifest the writer could place are caught before any write."""

from __future__ import annotations

import pytest

from shared.decide.bootstrap import GITTARGETIGNORE
from shared.decide.ignore import MAX_CHARS, Ignore, Unreadable


def test_patterns_match_relative_to_the_folder() -> None:
    ignore = Ignore.parse("apps", "# notes\nnotes/\n*.draft.yaml\n!keep.draft.yaml\n")
    assert ignore.ignores("apps/notes/deploy.sh")
    assert ignore.ignores("apps/team/x.draft.yaml")
    assert not ignore.ignores("apps/keep.draft.yaml")
    assert not ignore.ignores("apps/team/configmaps/app.yaml")
    assert ignore.hides_every_manifest() is None


def test_the_ignore_file_itself_is_never_ignored() -> None:
    assert not Ignore.parse("", "*\n").ignores(".gittargetignore")


def test_the_bootstrap_template_ignores_nothing() -> None:
    ignore = Ignore.parse("apps", GITTARGETIGNORE.decode())
    assert ignore.spec is None
    assert not ignore.ignores("apps/notes/anything.sh")


@pytest.mark.parametrize("pattern", ["*", "**", "*.yaml", "*/", "**/*.y*ml", "_cluster/\n*/*"])
def test_a_pattern_hiding_every_manifest_is_caught(pattern: str) -> None:
    assert Ignore.parse("apps", pattern).hides_every_manifest() is not None


@pytest.mark.parametrize("pattern", ["notes/", "*.md", "*.yml", "team/legacy.yaml", "*.draft.yaml"])
def test_a_narrow_pattern_is_not_caught_up_front(pattern: str) -> None:
    assert Ignore.parse("apps", pattern).hides_every_manifest() is None


@pytest.mark.parametrize(
    "text",
    [
        "a" * 100_000,  # the probe's one line (N1): re2 failed to compile it
        "\n".join(f"x{i}/*.tmp" for i in range(5_000)),  # the probe's 5,000 lines (59 KB)
        "a" * (MAX_CHARS + 1),
    ],
)
def test_a_file_too_large_to_match_is_unreadable_not_an_error_of_the_process(text: str) -> None:
    """N1: ``re2.Error: failed to compile Set`` came out of ``parse`` and stopped the branch
    worker; now ``Unreadable``, which refuses the folder."""
    with pytest.raises(Unreadable, match="longer than"):
        Ignore.parse("apps", text)


@pytest.mark.parametrize("pattern", ["!", "\\", "notes/\n!\n"])
def test_a_pattern_gitignore_does_not_allow_is_unreadable(pattern: str) -> None:
    """pathspec's own pattern error escaped too (the same class as N1)."""
    with pytest.raises(Unreadable, match="cannot be compiled"):
        Ignore.parse("apps", pattern)


def test_a_file_of_ordinary_size_is_read() -> None:
    lines = [f"x{i}/*.tmp" for i in range(600)]
    text = "\n".join(lines)
    assert len(text) <= MAX_CHARS
    assert Ignore.parse("apps", text).ignores("apps/x599/a.tmp")
