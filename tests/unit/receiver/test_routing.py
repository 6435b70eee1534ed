"""Which branches a push is a hint for (R4): only refs a GitTarget of the GitProvider uses."""

from __future__ import annotations

import pytest

from services.receiver.deliveries import Push, RefUpdate, parse
from services.receiver.routing import repository_path, route, same_repository
from shared.model.notices import PushNotice
from shared.model.receivers import ReceiverRecord
from tests.unit.receiver import samples

RECORD = ReceiverRecord(
    "team", "gp", "github", "hook", "https://git.example.com/team/apps.git", ("main", "staging")
)


def push(*updates: RefUpdate, repos: tuple[str, ...] = ("team/apps",)) -> Push:
    return Push("push", "d-1", repos, updates)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://git.example.com/team/apps.git", ("team", "apps")),
        ("git@git.example.com:Team/Apps.git", ("team", "apps")),
        ("ssh://git@git.example.com:7999/team/apps.git/", ("team", "apps")),
        ("http://127.0.0.1:8080/sandbox/demo.git", ("sandbox", "demo")),
        ("https://gitlab.example.com/group/sub/apps", ("group", "sub", "apps")),
    ],
)
def test_repository_path(url: str, path: tuple[str, ...]) -> None:
    """URL forms the hosts put in payloads (facts §1.1: clone_url, ssh_url, html_url)."""
    assert repository_path(url) == path


def test_same_repository_ignores_host_scheme_and_prefixes() -> None:
    """A Gitea behind a sub-path, or seen through an in-cluster Service, is the same repo."""
    assert same_repository("https://gitea.example.com/git/team/apps", RECORD.url)
    assert same_repository("ssh://git@gitea-ssh.git.svc:22/team/apps.git", RECORD.url)
    assert not same_repository("https://git.example.com/team/other.git", RECORD.url)
    assert not same_repository("", RECORD.url)


def test_a_push_to_a_used_branch_becomes_one_notice() -> None:
    """R4: provider, URL, ref, after, delivery id and time received."""
    routed = route(RECORD, push(RefUpdate("refs/heads/main", "a" * 40)), received_at=12.5)
    assert routed.notices == (
        PushNotice("team/gp", RECORD.url, "refs/heads/main", "a" * 40, "d-1", 12.5),
    )


@pytest.mark.parametrize(
    "ref", ["refs/heads/feature", "refs/tags/main", "refs/heads/mainline", "main"]
)
def test_a_ref_no_gittarget_uses_is_dropped(ref: str) -> None:
    """R4: a ref that no GitTarget of that provider uses is answered 202 and dropped."""
    routed = route(RECORD, push(RefUpdate(ref, "")), received_at=0.0)
    assert routed.notices == ()
    assert "no GitTarget" in routed.reason


def test_a_push_about_another_repository_is_dropped() -> None:
    """An organisation-wide hook, or a shared secret, can deliver other repositories' pushes."""
    other = push(RefUpdate("refs/heads/main", ""), repos=("https://git.example.com/x/y.git",))
    assert route(RECORD, other, 0.0).notices == ()
    same = push(
        RefUpdate("refs/heads/main", ""),
        repos=("git@git.example.com:team/apps.git", "https://elsewhere/a/b"),
    )
    assert len(route(RECORD, same, 0.0).notices) == 1


def test_several_refs_become_one_notice_per_used_branch() -> None:
    """Bitbucket pushes list several changes; each used branch gets one notice."""
    routed = route(
        RECORD,
        push(
            RefUpdate("refs/heads/staging", "1" * 40),
            RefUpdate("refs/heads/other", "2" * 40),
            RefUpdate("refs/heads/main", "3" * 40),
        ),
        0.0,
    )
    assert [(n.branch, n.after) for n in routed.notices] == [
        ("main", "3" * 40),
        ("staging", "1" * 40),
    ]


def test_every_branch_push_notifies_all_used_branches() -> None:
    """generic-hmac without a ref: every branch the GitProvider's GitTargets use."""
    routed = route(RECORD, Push("push", "", (), (), every_branch=True, anonymous=True), 0.0)
    assert [(n.branch, n.after) for n in routed.notices] == [("main", ""), ("staging", "")]


def test_a_push_that_names_no_repository_is_dropped() -> None:
    """Outside check 8: a host's push naming no repository could be about any repository."""
    routed = route(RECORD, push(RefUpdate("refs/heads/main", ""), repos=()), 0.0)
    assert routed.notices == () and routed.reason == "the delivery names no repository"


def test_only_an_anonymous_kind_of_delivery_skips_the_repository_check() -> None:
    """generic-hmac never names a repository: its secret alone ties it to the GitProvider."""
    generic = Push("push", "d-1", (), (RefUpdate("refs/heads/main", ""),), anonymous=True)
    assert len(route(RECORD, generic, 0.0).notices) == 1


def bitbucket_provider(url: str) -> ReceiverRecord:
    return ReceiverRecord("team", "gp", "bitbucket", "hook", url, ("main",))


def data_center_push(path: str) -> Push:
    """A Data Center ``repo:refs_changed`` naming its repository by key and slug only."""
    delivery = samples.named_by_path("bitbucket-server", path)
    result = parse("bitbucket", delivery.headers, delivery.document)
    assert isinstance(result, Push)
    return result


@pytest.mark.parametrize(
    "url",
    [
        "https://bitbucket.example.com/scm/prj/my-repo.git",
        "https://bitbucket.example.com/bitbucket/scm/PRJ/My-Repo",  # a context path
        "ssh://git@bitbucket.example.com:7999/prj/my-repo.git",
    ],
)
def test_a_bitbucket_key_and_slug_are_compared_with_the_urls_tail(url: str) -> None:
    """Outside check 8: ``PRJ/my-repo`` is the ``/scm/<key>/<slug>`` tail of an HTTP clone URL
    (and the tail of an SSH one), case-insensitively; another key or slug is another one."""
    record = bitbucket_provider(url)
    assert len(route(record, data_center_push("PRJ/my-repo"), 0.0).notices) == 1
    for other in ("PRJ/other", "OTHER/my-repo", "PRJ/my-repo-old"):
        routed = route(record, data_center_push(other), 0.0)
        assert routed.notices == (), other
        assert routed.reason == "the delivery is about another repository"
