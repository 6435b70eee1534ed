"""Branch keys come from normalised repository URLs (behaviour.md §0, Branch)."""

from __future__ import annotations

import pytest

from shared.model.ids import Branch, ObjectId, normalise_url


@pytest.mark.parametrize(
    "url",
    [
        "https://Git.Example.com/team/repo.git",
        "https://git.example.com/team/repo/",
        "HTTPS://git.example.com/team/repo",
        "https://user:secret@git.example.com/team/repo.git/",
    ],
)
def test_spellings_of_one_repository_normalise_alike(url: str) -> None:
    assert normalise_url(url) == "https://git.example.com/team/repo"


def test_ports_are_kept() -> None:
    assert normalise_url("http://127.0.0.1:8080/r.git") == "http://127.0.0.1:8080/r"


def test_branch_keys_are_shared_by_spellings_and_differ_by_branch() -> None:
    a = Branch("https://git.example.com/team/repo.git", "main")
    b = Branch("https://GIT.example.com/team/repo", "main")
    c = Branch("https://git.example.com/team/repo", "dev")
    assert a.key == b.key
    assert a.key != c.key
    assert a.key.isalnum()


def test_object_identity_ignores_the_version() -> None:
    v1 = ObjectId("apps", "v1", "deployments", "Deployment", "ns", "web")
    v2 = ObjectId("apps", "v1beta1", "deployments", "Deployment", "ns", "web")
    assert v1.same_object(v2)
    assert v1.api_version == "apps/v1"
    assert ObjectId("", "v1", "configmaps", "ConfigMap", "ns", "x").api_version == "v1"
