"""M4 placement, M6 windows and M10 path refusals, as pure rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.decide.placement import (
    PlacementRefused,
    canonical_path,
    inside,
    is_manifest,
    is_recognised,
)
from shared.decide.window import closes_at, is_due, open_window
from shared.model.ids import ObjectId


def test_canonical_paths() -> None:
    cm = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "app")
    dep = ObjectId("apps", "v1", "deployments", "Deployment", "team", "web")
    ns = ObjectId("", "v1", "namespaces", "Namespace", "", "team")
    assert canonical_path("clusters/prod", cm) == "clusters/prod/team/configmaps/app.yaml"
    assert canonical_path("clusters/prod/", dep) == "clusters/prod/team/apps/deployments/web.yaml"
    assert canonical_path("apps", ns) == "apps/_cluster/namespaces/team.yaml"
    assert canonical_path("", cm) == "team/configmaps/app.yaml"


@pytest.mark.parametrize("relative", ["../x.yaml", "a/../../x.yaml", "/etc/passwd"])
def test_paths_leaving_the_folder_are_refused(relative: str) -> None:
    with pytest.raises(PlacementRefused):
        inside("apps", relative)


def test_a_crafted_name_cannot_escape() -> None:
    evil = ObjectId("", "v1", "configmaps", "ConfigMap", "..", "..")
    with pytest.raises(PlacementRefused):
        canonical_path("apps", evil)


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "c"]), max_size=6))
def test_inside_never_returns_a_path_outside(parts: list[str]) -> None:
    try:
        result = inside("base", "/".join(parts) or ".")
    except PlacementRefused:
        return
    assert result == "base" or result.startswith("base/")


def test_file_kinds() -> None:
    assert is_manifest("a/b.yaml") and is_manifest("a/b.yml")
    assert is_recognised("a/README.md") and is_recognised(".gittargetignore")
    assert not is_recognised("a/script.sh")


def test_rolling_window_restarts_on_each_write() -> None:
    w = open_window(100.0)
    assert not is_due(w, 104.9, commit_window=5, max_age=60)
    w = w.with_write(104.0)
    assert not is_due(w, 108.9, commit_window=5, max_age=60)
    assert is_due(w, 109.0, commit_window=5, max_age=60)
    assert w.writes == 2


def test_max_age_closes_a_window_that_keeps_getting_writes() -> None:
    w = open_window(0.0)
    for t in range(1, 60):
        w = w.with_write(float(t))
    assert closes_at(w, commit_window=5, max_age=60) == 60.0
    assert is_due(w, 60.0, commit_window=5, max_age=60)


def test_zero_window_is_due_at_once() -> None:
    assert is_due(open_window(5.0), 5.0, commit_window=0, max_age=60)
