"""Pushes to the git host send webhooks exactly as GitHub, Gitea, Forgejo and GitLab do.

Every signature here is recomputed independently with ``hmac`` from the facts in
../shared/facts/webhooks-git-libs.md, never with the host's own signing code.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from sandbox.githost import GitHost, Hook
from tests.sandbox.integration.test_githost_support import (
    Git,
    Received,
    Receiver,
    payload_of,
    repo_with_hooks,
)

pytestmark = pytest.mark.integration

SECRET = "It's a Secret to Everybody"
ZERO = "0" * 40


def mac(data: bytes, digest: str = "sha256", secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), data, getattr(hashlib, digest)).hexdigest()


def check_github_headers(got: Received, event: str) -> None:
    """Facts §1.1: X-GitHub-Event/-Delivery (a GUID)/-Hook-ID; sha256= and sha1= over the body."""
    h = got.headers
    assert h["x-github-event"] == event
    assert uuid.UUID(h["x-github-delivery"]).version == 4
    assert h["x-github-hook-id"].isdigit()
    assert h["x-hub-signature-256"] == "sha256=" + mac(got.body)
    assert h["x-hub-signature"] == "sha1=" + mac(got.body, "sha1")


def check_gitea_headers(got: Received, event: str, vendors: tuple[str, ...]) -> None:
    """Facts §1.2/§1.3: every vendor header, bare hex, HMAC over the JSON even in a form."""
    h, signed = got.headers, got.body
    if h["content-type"] == "application/x-www-form-urlencoded":
        signed = parse_qs(got.body.decode())["payload"][0].encode()
    delivery = h["x-gitea-delivery"]
    for vendor in vendors:
        assert h[f"x-{vendor}-delivery"] == delivery
        assert h[f"x-{vendor}-event"] == h[f"x-{vendor}-event-type"] == event
        assert h[f"x-{vendor}-signature"] == mac(signed)
    assert h["x-github-delivery"] == delivery and h["x-github-event"] == event
    assert h["x-hub-signature-256"] == "sha256=" + mac(signed)
    assert h["x-hub-signature"] == "sha1=" + mac(signed, "sha1")


def check_gitlab_headers(got: Received, event: str) -> None:
    """Facts §1.4: the plain secret in X-Gitlab-Token, the event name in X-Gitlab-Event."""
    h = got.headers
    assert h["x-gitlab-token"] == SECRET and h["x-gitlab-event"] == event
    assert uuid.UUID(h["x-gitlab-event-uuid"]) and uuid.UUID(h["x-gitlab-webhook-uuid"])
    assert "x-hub-signature-256" not in h


PROVIDERS = [
    ("github", "json"),
    ("github", "form"),
    ("gitea", "json"),
    ("gitea", "form"),
    ("forgejo", "json"),
    ("forgejo", "form"),
    ("gitlab", "json"),
]


@pytest.mark.parametrize("case", PROVIDERS, ids="-".join)
def test_push_delivery_per_provider(
    case: tuple[str, str], host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """One push, one signed delivery whose ref/before/after/commits are the real ones.

    Facts: §1.1 (GitHub headers, signature over the raw body, form ``payload=``), §1.2 and
    §1.3 (Gitea/Forgejo headers, signature over the JSON, no created/deleted/forced), §1.4
    (GitLab token and ``Push Hook``); push payload fields as listed there.
    """
    provider, content_type = case
    hook = Hook(receiver.url(), provider, content_type, SECRET)  # type: ignore[arg-type]
    url, work = repo_with_hooks(host, git, tmp_path / "w", hook)
    before = git.head(work)
    git.commit(work, "app.yaml", b"replicas: 2\n", "scale up")
    after = git.commit(work, "extra.yaml", b"x: 1\n", "add extra")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    got = receiver.wait(1)[0]
    payload = payload_of(got)
    assert (payload["ref"], payload["before"], payload["after"]) == (
        "refs/heads/main",
        before,
        git.ls_remote(url)["refs/heads/main"],
    ) and after == payload["after"]
    newest_first = git.run("rev-list", f"{before}..{after}", cwd=work).stdout.split()
    check_provider(provider, got, payload, newest_first)
    delivery = host.wait_for_deliveries(1, 5, repo="demo")[0]
    assert (delivery.status, delivery.error, delivery.attempt) == (200, None, 1)
    assert delivery.body == got.body and delivery.event == "push"


def check_provider(
    provider: str, got: Received, payload: dict[str, Any], commits: list[str]
) -> None:
    ids = [c["id"] for c in payload["commits"]]
    if provider == "github":
        check_github_headers(got, "push")
        assert ids == commits[::-1] and payload["head_commit"]["id"] == commits[0]
        assert (payload["created"], payload["deleted"], payload["forced"]) == (False,) * 3
        assert payload["commits"][1]["added"] == ["extra.yaml"]
    elif provider == "gitlab":
        check_gitlab_headers(got, "Push Hook")
        assert payload["object_kind"] == "push" and ids == commits[::-1]
        assert payload["checkout_sha"] == commits[0] and payload["total_commits_count"] == 2
    else:
        vendors = ("forgejo", "gitea", "gogs") if provider == "forgejo" else ("gitea", "gogs")
        check_gitea_headers(got, "push", vendors)
        assert ids == commits and payload["total_commits"] == 2
        assert not {"created", "deleted", "forced"} & set(payload)
        assert payload["compare_url"].endswith(f"...{commits[0]}")
        assert ("compare" in payload) == (provider == "forgejo")


def test_form_signatures_differ_between_github_and_gitea(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """GitHub signs the urlencoded body, Gitea the JSON inside ``payload`` (facts §1.2 surprise).

    A GitHub-style check over the raw body therefore fails for a Gitea form delivery.
    """
    hooks = [
        Hook(receiver.url("/gh"), "github", "form", SECRET),
        Hook(receiver.url("/gt"), "gitea", "form", SECRET),
    ]
    _, work = repo_with_hooks(host, git, tmp_path / "w", *hooks)
    git.commit(work, "app.yaml", b"replicas: 3\n", "scale")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    by_path = {r.path: r for r in receiver.wait(2)}
    github, gitea = by_path["/gh"], by_path["/gt"]
    assert github.body.startswith(b"payload=") and gitea.body.startswith(b"payload=")
    assert github.headers["x-hub-signature-256"] == "sha256=" + mac(github.body)
    inner = parse_qs(gitea.body.decode())["payload"][0].encode()
    assert gitea.headers["x-gitea-signature"] == mac(inner)
    assert gitea.headers["x-hub-signature-256"] != "sha256=" + mac(gitea.body)


def test_signatures_without_a_secret(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """No secret: GitHub sends no signature headers (§1.1); Gitea sends them empty (§1.2)."""
    hooks = [Hook(receiver.url("/gh"), "github"), Hook(receiver.url("/gt"), "gitea")]
    _, work = repo_with_hooks(host, git, tmp_path / "w", *hooks)
    git.commit(work, "app.yaml", b"replicas: 4\n", "scale")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    by_path = {r.path: r.headers for r in receiver.wait(2)}
    assert "x-hub-signature-256" not in by_path["/gh"]
    assert "x-hub-signature" not in by_path["/gh"]
    assert by_path["/gt"]["x-hub-signature-256"] == "sha256="
    assert by_path["/gt"]["x-hub-signature"] == "sha1="
    assert by_path["/gt"]["x-gitea-signature"] == ""


def test_github_created_forced_and_deleted(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """GitHub flags created/forced/deleted; a delete has a zero ``after``, no commits, no head.

    Facts §1.1 "Deletions" and push payload fields; create/delete events carry the short ref.
    """
    hook = Hook(receiver.url(), "github", secret=SECRET, events=("push", "create", "delete"))
    _, work = repo_with_hooks(host, git, tmp_path / "w", hook)
    git.run("checkout", "--quiet", "-b", "feature", cwd=work)
    first = git.commit(work, "f.txt", b"1", "feature work")
    git.run("push", "--quiet", "origin", "feature", cwd=work)
    created = {r.headers["x-github-event"]: payload_of(r) for r in receiver.wait(2)}
    assert created["push"]["created"] and created["push"]["before"] == ZERO
    assert [c["id"] for c in created["push"]["commits"]] == [first]
    assert (created["create"]["ref"], created["create"]["ref_type"]) == ("feature", "branch")

    git.run("commit", "--quiet", "--amend", "-m", "rewritten", cwd=work)
    git.run("push", "--quiet", "--force", "origin", "feature", cwd=work)
    forced = payload_of(receiver.wait(3)[2])
    assert forced["forced"] and forced["before"] == first and not forced["created"]

    git.run("push", "--quiet", "origin", ":feature", cwd=work)
    deleted = {r.headers["x-github-event"]: payload_of(r) for r in receiver.wait(5)[3:]}
    assert deleted["push"]["deleted"] and deleted["push"]["after"] == ZERO
    assert deleted["push"]["commits"] == [] and deleted["push"]["head_commit"] is None
    assert deleted["delete"]["ref"] == "feature"


def settle(host: GitHost, git: Git, tmp_path: Path, receiver: Receiver) -> Received:
    """Push to a second repository and wait for its delivery: the sender is first in, first
    out, so everything queued before it has been recorded by then."""
    url = host.create_repo("sentinel", files={"s": b"0"})
    host.add_hook("sentinel", Hook(receiver.url("/sentinel"), "github"))
    work = git.clone(url, tmp_path / "sentinel")
    git.commit(work, "s", b"1", "sentinel")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    host.wait_for_deliveries(1, 10, repo="sentinel")
    return next(r for r in receiver.requests if r.path == "/sentinel")


def test_gitea_branch_delete_is_a_delete_event(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """Gitea: a new branch sends create then push; a deleted branch only ``delete``; a deleted
    tag a push with a zero ``after`` and a ``delete`` (facts §1.2 "Deletions";
    go-gitea/gitea services/repository/push.go and services/webhook/notifier.go DeleteRef).
    """
    hook = Hook(receiver.url(), "gitea", secret=SECRET, events=("push", "create", "delete"))
    _, work = repo_with_hooks(host, git, tmp_path / "w", hook)
    git.run("push", "--quiet", "origin", "main:feature", cwd=work)
    create, push = receiver.wait(2)
    assert [create.headers["x-gitea-event"], push.headers["x-gitea-event"]] == ["create", "push"]
    assert payload_of(create)["sha"] == payload_of(push)["after"] == git.head(work)
    assert payload_of(create)["ref"] == "feature"
    git.run("push", "--quiet", "origin", ":feature", cwd=work)
    git.run("tag", "v1", cwd=work)
    git.run("push", "--quiet", "origin", "v1", cwd=work)
    git.run("push", "--quiet", "origin", ":refs/tags/v1", cwd=work)
    settle(host, git, tmp_path, receiver)
    events = [
        (r.headers["x-gitea-event"], payload_of(r))
        for r in receiver.requests[2:]
        if r.path == "/hook"
    ]
    assert [e for e, _ in events] == ["delete", "push", "create", "push", "delete"]
    assert (events[0][1]["ref"], events[0][1]["ref_type"]) == ("feature", "branch")
    assert events[3][1]["ref"] == "refs/tags/v1" and events[3][1]["after"] == ZERO
    assert events[4][1]["ref_type"] == "tag"


def test_gitlab_delete_and_tag_push(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """GitLab: a deleted branch is a ``Push Hook`` with zero ``after``, null ``checkout_sha``
    and no ``deleted`` flag (facts §1.1 "Deletions", §1.4); tags are ``Tag Push Hook``
    (https://docs.gitlab.com/user/project/integrations/webhook_events/#tag-events).
    """
    hook = Hook(receiver.url(), "gitlab", secret=SECRET, events=("push", "tag_push"))
    _, work = repo_with_hooks(host, git, tmp_path / "w", hook)
    git.run("push", "--quiet", "origin", "main:feature", cwd=work)
    git.run("push", "--quiet", "origin", ":feature", cwd=work)
    gone = payload_of(receiver.wait(2)[1])
    assert (gone["ref"], gone["after"], gone["checkout_sha"]) == ("refs/heads/feature", ZERO, None)
    assert "deleted" not in gone and gone["object_kind"] == "push"
    git.run("tag", "-a", "v1", "-m", "release", cwd=work)
    git.run("push", "--quiet", "origin", "v1", cwd=work)
    tag = receiver.wait(3)[2]
    assert tag.headers["x-gitlab-event"] == "Tag Push Hook"
    assert payload_of(tag)["object_kind"] == "tag_push"
    assert payload_of(tag)["checkout_sha"] == git.head(work)


def test_one_delivery_per_moved_ref(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """A push moving two branches and an annotated tag sends one push event per ref; the tag's
    ``after`` is the tag object and ``head_commit`` the commit it points at (§1.1)."""
    url, work = repo_with_hooks(host, git, tmp_path / "w", Hook(receiver.url(), "github"))
    head = git.commit(work, "app.yaml", b"replicas: 5\n", "scale")
    git.run("tag", "-a", "v2", "-m", "release", cwd=work)
    git.run("push", "--quiet", "origin", "main", "main:other", "v2", cwd=work)
    payloads = {p["ref"]: p for p in map(payload_of, receiver.wait(3))}
    refs = git.ls_remote(url)
    assert set(payloads) == {"refs/heads/main", "refs/heads/other", "refs/tags/v2"}
    assert payloads["refs/tags/v2"]["after"] == refs["refs/tags/v2"] != head
    assert payloads["refs/tags/v2"]["head_commit"]["id"] == head
    assert payloads["refs/heads/other"]["created"]


def test_gitlab_sends_no_push_events_for_more_than_three_branches(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """GitLab: no push event when "a single push includes changes for more than three branches"
    (https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events)."""
    hooks = [Hook(receiver.url("/gl"), "gitlab"), Hook(receiver.url("/gh"), "github")]
    _, work = repo_with_hooks(host, git, tmp_path / "w", *hooks)
    git.run("push", "--quiet", "origin", *[f"main:b{i}" for i in range(4)], cwd=work)
    git.run("push", "--quiet", "origin", "main:three", cwd=work)
    settle(host, git, tmp_path, receiver)
    gitlab = [payload_of(r)["ref"] for r in receiver.requests if r.path == "/gl"]
    assert gitlab == ["refs/heads/three"]
    assert sum(r.path == "/gh" for r in receiver.requests) == 5


def test_github_shares_the_delivery_guid_across_hooks(
    host: GitHost, git: Git, receiver: Receiver, tmp_path: Path
) -> None:
    """GitHub's X-GitHub-Delivery names the event, "shared with all deliveries for all webhooks
    that subscribe to this event" (hook delivery ``guid``, GitHub REST API; github/docs#32822),
    so two hooks get the same id and different X-GitHub-Hook-IDs."""
    one, two = Hook(receiver.url("/one"), "github"), Hook(receiver.url("/two"), "github")
    _, work = repo_with_hooks(host, git, tmp_path / "w", one, two)
    git.commit(work, "app.yaml", b"replicas: 6\n", "scale")
    git.run("push", "--quiet", "origin", "main", cwd=work)
    a, b = (r.headers for r in receiver.wait(2))
    assert a["x-github-delivery"] == b["x-github-delivery"]
    assert a["x-github-hook-id"] != b["x-github-hook-id"]
    with pytest.raises(ValueError, match="name the hook"):
        host.redeliver(a["x-github-delivery"])
    again = host.redeliver(a["x-github-delivery"], hook=two)
    assert (again.attempt, again.status) == (2, 200) and receiver.wait(3)[2].path == "/two"
