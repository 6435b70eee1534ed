"""T3 (the reliability probe's URL finding): credentials in a GitProvider's ``spec.url``
are refused, by the
CRD's CEL rule and by the product's own check, which stalls the GitProvider and keeps its
GitTargets from being served; the messages never repeat the URL."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from services.watcher.probe import Prober
from services.watcher.providers import provider_problems
from shared.decide.targets import Surroundings, validate
from shared.decide.urls import CREDENTIALS_IN_URL, has_credentials
from shared.model.crds import parse_cluster_provider, parse_git_provider, parse_git_target

WITH_CREDENTIALS = [
    "http://alice:s3cretPW-alice@127.0.0.1:18103/sandbox/priv2.git",
    "https://ghp_token@github.com/o/r.git",
    "https://user:@h/r",
    "ssh://git:hunter2@host/r.git",
    "git:hunter2@host:r.git",
]
WITHOUT = [
    "https://github.com/o/r.git",
    "https://h/p/a@b?x=@#@",
    "ssh://git@127.0.0.1:1/sandbox/x.git",
    "ssh://host:22/r.git",
    "git@github.com:o/r.git",
]


@pytest.mark.parametrize("url", WITH_CREDENTIALS)
def test_credentials_are_found(url: str) -> None:
    assert has_credentials(url)


@pytest.mark.parametrize("url", WITHOUT)
def test_a_user_name_for_ssh_or_an_at_sign_after_the_host_is_not_a_credential(url: str) -> None:
    assert not has_credentials(url)


@pytest.mark.parametrize("url", WITH_CREDENTIALS)
def test_its_gittargets_are_not_served_and_the_message_hides_the_url(url: str) -> None:
    provider = parse_git_provider(
        {
            "metadata": {"namespace": "a", "name": "p"},
            "spec": {"url": url, "allowedBranches": ["*"]},
        }
    )
    cluster = parse_cluster_provider(
        {"metadata": {"name": "default"}, "spec": {"accessFrom": {"names": ["a"]}}}
    )
    target = parse_git_target(
        {
            "metadata": {"namespace": "a", "name": "t", "uid": "u"},
            "spec": {"providerRef": {"name": "p"}, "branch": "main", "path": "x"},
        }
    )
    verdict = validate(target, Surroundings(provider, cluster, {}))
    assert verdict.reason == CREDENTIALS_IN_URL
    assert url not in verdict.message and "hunter2" not in verdict.message


def test_the_git_provider_is_stalled_without_a_probe() -> None:
    """git never sees such a URL: no ls-remote, no Secret read; the message hides the URL."""
    called: list[str] = []

    def lister(url: str, ref: str, env: Mapping[str, str]) -> str | None:
        called.append(url)
        return None

    url = "https://alice:hunter2@h/r.git"
    provider = parse_git_provider(
        {
            "metadata": {"namespace": "a", "name": "p"},
            "spec": {"url": url, "allowedBranches": ["*"], "secretRef": {"name": "s"}},
        }
    )
    (problem,) = provider_problems(provider, None, Prober(lambda: 0.0, lister=lister))  # type: ignore[arg-type]
    assert (problem.reason, problem.permanent) == (CREDENTIALS_IN_URL, True)
    assert "hunter2" not in problem.message
    assert called == []
