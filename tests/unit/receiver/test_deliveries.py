"""Parsing verified deliveries into pushes, pings and ignored events (R3, R4).

Facts: ../shared/facts/webhooks-git-libs.md §1.1-1.5 (events and payload fields per host),
§1.7 (never index optional payload fields unchecked: Argo CD's panics on crafted payloads).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.receiver.deliveries import (
    ZERO_SHA,
    Ignored,
    Malformed,
    Ping,
    Push,
    RefUpdate,
    parse,
)
from shared.model.receivers import RECEIVER_TYPES, ReceiverType
from tests.unit.receiver import samples
from tests.unit.receiver.samples import AFTER, REPO_URL, Delivery, every_kind, kind_of


def parsed(kind: str, d: Delivery) -> Push | Ping | Ignored:
    known: ReceiverType = kind  # type: ignore[assignment]
    return parse(known, d.headers, d.document)


@pytest.mark.parametrize("name", sorted(every_kind()))
def test_every_push_names_main_and_its_after(name: str) -> None:
    """§1.1-1.5: each host's push payload says which ref moved and where to."""
    result = parsed(kind_of(name), every_kind()[name])
    assert isinstance(result, Push)
    assert result.updates == (RefUpdate("refs/heads/main", AFTER),)


def test_github_push_carries_delivery_event_and_repository_urls() -> None:
    """§1.1: X-GitHub-Delivery, X-GitHub-Event, repository.{clone,html,ssh}_url."""
    result = parsed("github", samples.github(samples.github_push(), delivery="abc"))
    assert isinstance(result, Push)
    assert (result.event, result.delivery) == ("push", "abc")
    assert REPO_URL in result.repositories
    assert "git@git.example.com:team/apps.git" in result.repositories


def test_github_ping_and_other_events() -> None:
    """§1.1: a ping is answered and does nothing; create/issues are not pushes."""
    assert parsed("github", samples.github_ping()) == Ping("ping", "gh-ping")
    other = samples.github(samples.gitea_ref_event("feature"), event="create", delivery="c")
    assert parsed("github", other) == Ignored("create", "c")


def test_github_delete_push_has_the_zero_after() -> None:
    """§1.1: a deleted ref is a push with after = 40 zeros."""
    result = parsed("github", samples.github(samples.github_push(after=ZERO_SHA)))
    assert isinstance(result, Push) and result.updates[0].after == ZERO_SHA


@pytest.mark.parametrize(
    ("event", "payload", "update"),
    [
        ("create", samples.gitea_ref_event("main"), RefUpdate("refs/heads/main", AFTER)),
        (
            "delete",
            samples.gitea_ref_event("main", sha=None),
            RefUpdate("refs/heads/main", ZERO_SHA),
        ),
        ("create", samples.gitea_ref_event("v1", "tag"), RefUpdate("refs/tags/v1", AFTER)),
        ("delete", samples.gitea_ref_event("refs/heads/x"), RefUpdate("refs/heads/x", ZERO_SHA)),
    ],
)
def test_gitea_create_and_delete_become_pushes(
    event: str, payload: dict[str, Any], update: RefUpdate
) -> None:
    """§1.2/§1.3: create/delete carry the short ref (a Forgejo-type hook may keep it full);
    a branch delete raises only ``delete``, so it must count as a push."""
    result = parsed("gitea", samples.gitea(payload, event=event, delivery="d"))
    assert isinstance(result, Push)
    assert result.updates == (update,) and result.delivery == "d"


def test_forgejo_headers_win_for_event_and_delivery() -> None:
    """§1.3: Forgejo sends X-Forgejo-* besides the Gitea/Gogs/GitHub headers."""
    d = samples.gitea(samples.gitea_push(), forgejo=True, delivery="fj")
    d = d.with_header("X-Gitea-Delivery", "other").with_header("X-Gitea-Event", "issues")
    result = parsed("gitea", d)
    assert isinstance(result, Push) and result.delivery == "fj"


def test_gitea_other_events_are_ignored() -> None:
    """§1.2: only push, create and delete are hints."""
    d = samples.gitea({"action": "opened"}, event="pull_request", delivery="p")
    assert parsed("gitea", d) == Ignored("pull_request", "p")


def test_gitlab_push_tag_push_and_other_hooks() -> None:
    """§1.4: Push Hook and Tag Push Hook are pushes; Idempotency-Key is the delivery id."""
    push = parsed("gitlab", samples.gitlab(samples.gitlab_push(), delivery="g1"))
    assert isinstance(push, Push) and push.delivery == "g1"
    tag = samples.gitlab(
        samples.gitlab_push("refs/tags/v1", kind="tag_push"), event="Tag Push Hook"
    )
    result = parsed("gitlab", tag)
    assert isinstance(result, Push) and result.updates[0].ref == "refs/tags/v1"
    note = samples.gitlab({"object_kind": "note"}, event="Note Hook", delivery="n")
    assert parsed("gitlab", note) == Ignored("Note Hook", "n")


def test_gitlab_delete_has_zero_after_and_no_flag() -> None:
    """§1.1/§1.4: GitLab has no deleted flag; a deletion has after = zeros."""
    result = parsed("gitlab", samples.gitlab(samples.gitlab_push(after=ZERO_SHA)))
    assert isinstance(result, Push) and result.updates[0].after == ZERO_SHA


def test_bitbucket_cloud_branch_deletion_and_server_ping() -> None:
    """Bitbucket Cloud: a deleted branch has ``new: null``; Data Center pings with
    ``diagnostics:ping`` (https://confluence.atlassian.com/bitbucketserver/event-payload-938025882.html)."""
    deleted = parsed("bitbucket", samples.bitbucket(samples.bitbucket_cloud_push(after=None)))
    assert isinstance(deleted, Push)
    assert deleted.updates == (RefUpdate("refs/heads/main", ZERO_SHA),)
    ping = samples.bitbucket({"test": True}, event="diagnostics:ping", delivery="p", cloud=False)
    assert parsed("bitbucket", ping) == Ping("diagnostics:ping", "p")


def test_bitbucket_server_clone_links_are_the_repositories() -> None:
    """Bitbucket Data Center: repository.links.clone[].href (ssh and http)."""
    d = samples.bitbucket(
        samples.bitbucket_server_push(kind="DELETE"), event="repo:refs_changed", cloud=False
    )
    result = parsed("bitbucket", d)
    assert isinstance(result, Push)
    assert result.updates == (RefUpdate("refs/heads/main", ZERO_SHA),)
    assert "https://git.example.com/scm/team/apps.git" in result.repositories


@pytest.mark.parametrize("name", samples.HOSTS)
def test_a_host_push_named_by_path_alone_carries_that_path(name: str) -> None:
    """Outside check 8: a payload without URLs still names its repository (GitHub/Gitea/
    Bitbucket Cloud ``full_name``, GitLab ``path_with_namespace``, Data Center key and slug)."""
    result = parsed(kind_of(name), samples.named_by_path(name, "PRJ/my-repo"))
    assert isinstance(result, Push) and not result.anonymous
    assert result.repositories == ("PRJ/my-repo",)


@pytest.mark.parametrize(("key", "slug"), [("PR/J", "apps"), ("PRJ", "a:b"), ("", "apps")])
def test_a_bitbucket_key_or_slug_that_is_not_one_path_segment_names_nothing(
    key: str, slug: str
) -> None:
    """A separator inside the key or slug would make ``<key>/<slug>`` another path."""
    payload = samples.bitbucket_server_push(key=key, slug=slug, links=False)
    d = samples.bitbucket(payload, event="repo:refs_changed", cloud=False)
    result = parsed("bitbucket", d)
    assert isinstance(result, Push) and result.repositories == ()


def test_only_generic_hmac_deliveries_are_anonymous() -> None:
    """generic-hmac names no repository by design; every host's push does."""
    for name, delivery in every_kind().items():
        result = parsed(kind_of(name), delivery)
        assert isinstance(result, Push)
        assert result.anonymous == (name == "generic-hmac"), name
        assert result.anonymous or result.repositories, name


def test_generic_hmac_without_ref_means_every_branch() -> None:
    """generic-hmac (facts §1.6) has no payload format: no ref means any branch may have moved."""
    result = parsed("generic-hmac", samples.generic({}, delivery="x"))
    assert isinstance(result, Push) and result.every_branch and result.delivery == "x"


@pytest.mark.parametrize(
    ("kind", "document"),
    [
        ("github", b"not json"),
        ("github", b"[1, 2]"),
        ("gitea", b'"a string"'),
        ("gitlab", b"{" * 5000),
        ("bitbucket", b"\xff\xfe\x00"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_malformed(kind: str, document: bytes) -> None:
    """R3: malformed JSON after a valid signature is a 400, not a crash."""
    headers = {
        "X-GitHub-Event": "push",
        "X-Gitea-Event": "push",
        "X-Gitlab-Event": "Push Hook",
        "X-Event-Key": "repo:push",
    }
    with pytest.raises(Malformed):
        parse(kind, headers, document)  # type: ignore[arg-type]


def test_deeply_nested_json_is_malformed_not_a_recursion_error() -> None:
    """§1.7: crafted payloads crashed Argo CD's handlers; nesting must not crash ours."""
    with pytest.raises(Malformed):
        parse("github", {"X-GitHub-Event": "push"}, b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize(
    ("kind", "event", "payload"),
    [
        ("github", "push", {"ref": None, "repository": None}),
        ("github", "push", {"ref": 7}),
        ("gitea", "create", {"ref": "x", "ref_type": "commit"}),
        ("gitlab", "Push Hook", {"object_kind": "push", "ref": ["refs/heads/main"]}),
        ("bitbucket", "repo:push", {"push": {"changes": "all"}}),
        ("bitbucket", "repo:refs_changed", {"changes": None}),
        ("generic-hmac", "", {"ref": "main"}),
    ],
)
def test_a_push_without_a_usable_ref_is_malformed(
    kind: str, event: str, payload: dict[str, Any]
) -> None:
    """§1.7: optional fields are checked, and a push that names no ref is a 400."""
    headers = {
        "X-GitHub-Event": event,
        "X-Gitea-Event": event,
        "X-Gitlab-Event": event,
        "X-Event-Key": event,
    }
    with pytest.raises(Malformed):
        parse(kind, headers, json.dumps(payload).encode())  # type: ignore[arg-type]


def test_odd_values_in_optional_fields_are_dropped_not_trusted() -> None:
    """R4: ``after`` is a hint; a value that is no commit id is stored as unknown ("")."""
    payload = samples.github_push()
    payload.update({"after": "; rm -rf /", "repository": {"clone_url": 5}})
    result = parsed("github", samples.github(payload))
    assert isinstance(result, Push)
    assert result.updates == (RefUpdate("refs/heads/main", ""),) and result.repositories == ()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
EVENTS = st.sampled_from(
    [
        "push",
        "ping",
        "create",
        "delete",
        "Push Hook",
        "Tag Push Hook",
        "System Hook",
        "repo:push",
        "repo:refs_changed",
        "diagnostics:ping",
        "issues",
        "",
    ]
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "ref": JSON | st.sampled_from(["refs/heads/main", "main", "refs/tags/v"]),
        "after": JSON,
        "sha": JSON,
        "ref_type": st.sampled_from(["branch", "tag"]),
        "object_kind": st.sampled_from(["push", "tag_push"]),
        "repository": JSON,
        "changes": JSON,
        "push": JSON,
        "project": JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(RECEIVER_TYPES), event=EVENTS, payload=FIELDS | JSON)
def test_any_json_parses_or_is_malformed(kind: ReceiverType, event: str, payload: Any) -> None:
    """R3/§1.7: whatever JSON a verified sender sends, the answer is a result or a 400."""
    headers = {
        "X-GitHub-Event": event,
        "X-Gitea-Event": event,
        "X-Gitlab-Event": event,
        "X-Event-Key": event,
    }
    try:
        result = parse(kind, headers, json.dumps(payload).encode())
    except Malformed:
        return
    assert isinstance(result, Push | Ping | Ignored)
    if isinstance(result, Push):
        assert all(u.ref.startswith("refs/") for u in result.updates)
