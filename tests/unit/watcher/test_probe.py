"""The GitProvider probe hands git the credentials the shared resolver builds (D3, R5).

The lister is injected, so each test sees exactly the environment ``ls-remote`` would get and
whether the SSH files exist during the call and are gone after it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from services.watcher.probe import CONNECTION_FAILED, PROBE_REF, Prober
from shared.git.errors import GitPermanent, GitTemporary
from shared.model.crds import GitProviderView, parse_git_provider

KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nprobe\n-----END OPENSSH PRIVATE KEY-----\n"
URL = "ssh://git@git.example:2222/team/apps.git"


def _provider(generation: int = 1, uid: str = "u1", url: str = URL) -> GitProviderView:
    return parse_git_provider(
        {
            "metadata": {"name": "gp", "namespace": "team", "uid": uid, "generation": generation},
            "spec": {"url": url, "allowedBranches": ["main"], "secretRef": {"name": "creds"}},
        }
    )


class Lister:
    """Records each call and what the SSH identity file held while git would have run."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[str, str, dict[str, str]]] = []
        self.identities: list[Path] = []
        self.seen: list[bytes] = []

    def __call__(self, url: str, ref: str, env: Mapping[str, str]) -> str | None:
        self.calls.append((url, ref, dict(env)))
        if "GIT_SSH_COMMAND" in env:
            identity = Path(shlex.split(env["GIT_SSH_COMMAND"])[2])
            self.identities.append(identity)
            self.seen.append(identity.read_bytes())
        if self.error:
            raise self.error
        return None


def test_an_ssh_provider_is_probed_with_its_identity_deleted_afterwards() -> None:
    lister = Lister()
    prober = Prober(clock=lambda: 0.0, lister=lister)
    assert prober.probe(_provider(), {"identity": KEY, "known_hosts": b"h k\n"}) is None
    ((url, ref, env),) = lister.calls
    assert (url, ref) == (URL, PROBE_REF)
    assert "StrictHostKeyChecking=yes" in env["GIT_SSH_COMMAND"]
    assert lister.seen == [KEY]
    assert not lister.identities[0].exists()


def test_http_credentials_reach_git_as_a_header() -> None:
    lister = Lister()
    Prober(clock=lambda: 0.0, lister=lister).probe(_provider(), {"bearerToken": b"tok"})
    env = lister.calls[0][2]
    assert env["GIT_CONFIG_VALUE_0"] == "Authorization: Bearer tok"
    assert "GIT_SSH_COMMAND" not in env


def test_a_provider_without_a_secret_is_probed_without_credentials() -> None:
    lister = Lister()
    Prober(clock=lambda: 0.0, lister=lister).probe(_provider(), None)
    assert lister.calls[0][2] == {}


def test_refusals_become_connection_failed_and_results_are_cached() -> None:
    now = [0.0]
    lister = Lister(GitPermanent("git refused the credentials"))
    prober = Prober(clock=lambda: now[0], ttl_s=60.0, lister=lister)
    problem = prober.probe(_provider(), {"identity": KEY})
    assert problem is not None
    assert (problem.reason, problem.permanent) == (CONNECTION_FAILED, True)
    now[0] = 59.0
    assert prober.probe(_provider(), {"identity": KEY}) == problem
    assert len(lister.calls) == 1
    lister.error = GitTemporary("cannot reach")
    again = prober.probe(_provider(generation=2), {"identity": KEY})
    assert again is not None and not again.permanent
    assert len(lister.calls) == 2
    assert not any(path.exists() for path in lister.identities)


def test_one_probe_answers_for_every_provider_of_a_repository_and_its_credentials() -> None:
    """Five GitProviders over one repository with one Secret probe it once per period; other
    credentials, another repository, or a period over probe again."""
    now = [0.0]
    lister = Lister()
    prober = Prober(clock=lambda: now[0], ttl_s=60.0, lister=lister)
    for i in range(5):
        assert prober.probe(_provider(uid=f"u{i}"), {"identity": KEY}) is None
    assert len(lister.calls) == 1
    prober.probe(_provider(uid="u9"), {"identity": KEY + b"other"})
    prober.probe(_provider(uid="u8", url=URL + "2"), {"identity": KEY})
    assert len(lister.calls) == 3
    now[0] = 60.0
    for i in range(5):
        prober.probe(_provider(uid=f"u{i}"), {"identity": KEY})
    assert len(lister.calls) == 4, "expired together, probed again once"
