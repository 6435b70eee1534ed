"""The Flux source rule, decided once for ApplierConfigured and the dispatcher (S2, D4).

Facts: ../shared/facts/appliers.md F2. ``spec.ref`` precedence, lowest first: branch < tag <
semver < name < commit; a commit "takes precedence over all reference fields" even beside a
branch; no ``spec.ref`` (or an empty one) follows branch ``master``. F3: a Kustomization's
``sourceRef`` may name another kind than GitRepository.
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.applier_check import SourceRef, source_problem

URL = "https://git.example.org/team/config.git"
REPO = SourceRef("GitRepository", "flux-system", "config")


def _source(ref: dict[str, str] | None, url: str = URL) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": url, "interval": "24h"}
    if ref is not None:
        spec["ref"] = ref
    return {"metadata": {"namespace": "flux-system", "name": "config"}, "spec": spec}


@pytest.mark.parametrize(
    ("ref", "branch"),
    [
        ({"branch": "main"}, "main"),
        ({"name": "refs/heads/main"}, "main"),
        ({"branch": "dev", "name": "refs/heads/main"}, "main"),  # name outranks branch
        (None, "master"),  # absent: master
        ({}, "master"),  # empty: master
        ({"branch": ""}, "master"),
    ],
)
def test_a_source_that_follows_the_branch_has_no_problem(
    ref: dict[str, str] | None, branch: str
) -> None:
    """F2: the ref the source follows, by Flux's precedence, is ``refs/heads/<branch>``."""
    assert source_problem(REPO, _source(ref), URL, branch) is None


@pytest.mark.parametrize(
    ("ref", "branch", "follows"),
    [
        ({"branch": "main", "commit": "a" * 40}, "main", "commit " + "a" * 40),
        ({"branch": "main", "tag": "v1.0.0"}, "main", "tag v1.0.0"),
        ({"branch": "main", "semver": ">=1.0"}, "main", "semver >=1.0"),
        ({"name": "refs/heads/main", "commit": "b" * 40}, "main", "commit " + "b" * 40),
        ({"name": "refs/tags/v1"}, "main", "refs/tags/v1"),
        (None, "main", "refs/heads/master"),
        ({"branch": "dev"}, "main", "refs/heads/dev"),
    ],
)
def test_a_source_that_follows_something_else_is_a_source_mismatch(
    ref: dict[str, str] | None, branch: str, follows: str
) -> None:
    """D4 (audit probe 1): a commit or tag beside the branch pins the source; a ref-less
    source follows master, not ``main``. The message says what the source follows."""
    problem = source_problem(REPO, _source(ref), URL, branch)
    assert problem is not None and problem.reason == "SourceMismatch"
    assert f"follows {follows}, not branch {branch}" in problem.message
    assert str(problem).startswith("SourceMismatch: GitRepository flux-system/config")


def test_the_url_is_compared_once_normalised() -> None:
    """S2: the same repository spelled differently (case of the host, credentials, ``.git``,
    a trailing slash) is the same; another repository is a mismatch."""
    spelled = "https://bot@GIT.example.org/team/config/"
    assert source_problem(REPO, _source({"branch": "main"}, spelled), URL, "main") is None
    other = source_problem(REPO, _source({"branch": "main"}, URL + "x"), URL, "main")
    assert other is not None and other.reason == "SourceMismatch"
    assert f"not {URL}" in other.message


def test_another_source_kind_is_a_mismatch_and_a_missing_one_is_not_found() -> None:
    """F3: only a GitRepository is followed by branch; a sourceRef to it that finds nothing
    is ApplierNotFound."""
    bucket = source_problem(SourceRef("Bucket", "flux-system", "b"), None, URL, "main")
    assert bucket is not None and bucket.reason == "SourceMismatch"
    assert "reads a Bucket flux-system/b" in bucket.message
    missing = source_problem(REPO, None, URL, "main")
    assert missing is not None and (missing.reason, missing.message) == (
        "ApplierNotFound",
        "GitRepository flux-system/config not found",
    )
