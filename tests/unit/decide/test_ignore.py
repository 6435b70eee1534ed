"""P4: ``.gittargetignore`` in gitignore syntax, relative to the GitTarget's folder; patterns
that hide every manifest the writer could place are caught before any write."""

from __future__ import annotations

import pytest

from shared.decide.bootstrap import GITTARGETIGNORE
from shared.decide.ignore import Ignore


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
