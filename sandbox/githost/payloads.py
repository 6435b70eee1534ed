"""The webhook events and JSON bodies each provider sends for one ref change.

Pure functions from ``PushFacts`` to ``(event, payload)`` pairs, one module so the providers'
differences sit side by side (facts: ../shared/facts/webhooks-git-libs.md §1.1-1.4):

- GitHub sends ``push`` for every ref change (``created``/``deleted``/``forced`` flags, a zero
  ``after`` on delete), plus ``create``/``delete`` events with the short ref name.
- Gitea/Forgejo send no ``created``/``deleted``/``forced`` fields but ``compare_url`` and
  ``total_commits``; a branch delete is only a ``delete`` event, a tag delete is a ``push``
  with a zero ``after`` and a ``delete`` (services/repository/push.go); ``create``/``delete``
  carry the short ref name (services/webhook/notifier.go ``CreateRef``/``DeleteRef``).
- GitLab sends ``Push Hook`` (object_kind ``push``) for branches and ``Tag Push Hook``
  (``tag_push``) for tags, a zero ``after`` and a null ``checkout_sha`` on delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.githost.gitrepo import CommitInfo
from sandbox.githost.pushes import PushFacts

Payload = dict[str, Any]
Event = tuple[str, Payload]

# Gitea's [ui] FEED_MAX_COMMIT_NUM default; "also used in how many commits a webhook will send".
GITEA_MAX_COMMITS = 5
# GitLab push events list "Limited to 20 commits" (the latest twenty, oldest first).
GITLAB_MAX_COMMITS = 20
# GitLab: no push event when "a single push includes changes for more than three branches".
GITLAB_PUSH_BRANCH_LIMIT = 3


@dataclass(frozen=True, slots=True)
class RepoSite:
    """Where a repository lives, as the payloads' URLs and ids describe it."""

    id: int
    owner: str
    name: str
    base_url: str
    default_branch: str
    created_at: int

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def html_url(self) -> str:
        return f"{self.base_url}/{self.full_name}"

    @property
    def clone_url(self) -> str:
        return f"{self.html_url}.git"

    @property
    def ssh_url(self) -> str:
        host = self.base_url.split("://", 1)[-1].split(":", 1)[0]
        return f"git@{host}:{self.full_name}.git"


def events_for(provider: str, facts: PushFacts, site: RepoSite) -> list[Event]:
    """Every (event, payload) the provider sends for one ref change, in its order."""
    if provider == "github":
        return _github_events(facts, site)
    if provider in ("gitea", "forgejo"):
        return _gitea_events(facts, site, forgejo=provider == "forgejo")
    if provider == "gitlab":
        return _gitlab_events(facts, site)
    raise ValueError(f"unknown provider {provider!r}")


# GitHub ---------------------------------------------------------------------------------


def _github_events(facts: PushFacts, site: RepoSite) -> list[Event]:
    change = facts.change
    events: list[Event] = [("push", github_push(facts, site))]
    if change.created or change.deleted:
        kind = "create" if change.created else "delete"
        ref_event = _ref_event(facts, site, _github_repo(site), _github_user(facts), github=True)
        events.append((kind, ref_event))
    return events


def github_push(facts: PushFacts, site: RepoSite) -> Payload:
    """GitHub's push payload: commits oldest first, ``head_commit`` null after a delete."""
    c = facts.change
    commits = [_github_commit(x, site) for x in reversed(facts.pushed)]
    compare = f"{site.html_url}/compare/{c.before[:12]}...{c.after[:12]}"
    if c.created:
        compare = f"{site.html_url}/compare/{c.short_name}"
    return {
        "ref": c.ref,
        "before": c.before,
        "after": c.after,
        "repository": _github_repo(site),
        "pusher": {"name": facts.pusher, "email": _email(facts.pusher)},
        "sender": _github_user(facts),
        "created": c.created,
        "deleted": c.deleted,
        "forced": facts.forced,
        "base_ref": None,
        "compare": compare,
        "commits": commits,
        "head_commit": _github_commit(facts.head, site) if facts.head else None,
    }


def _github_commit(commit: CommitInfo, site: RepoSite) -> Payload:
    return {
        "id": commit.id,
        "tree_id": commit.tree_id,
        "distinct": True,
        "message": commit.message,
        "timestamp": commit.timestamp,
        "url": f"{site.html_url}/commit/{commit.id}",
        "author": {"name": commit.author.name, "email": commit.author.email},
        "committer": {"name": commit.committer.name, "email": commit.committer.email},
        "added": list(commit.added),
        "removed": list(commit.removed),
        "modified": list(commit.modified),
    }


def _github_repo(site: RepoSite) -> Payload:
    return {
        "id": site.id,
        "name": site.name,
        "full_name": site.full_name,
        "private": False,
        "owner": {"name": site.owner, "login": site.owner, "id": 1, "type": "User"},
        "html_url": site.html_url,
        "url": site.html_url,
        "fork": False,
        "created_at": site.created_at,
        "git_url": site.clone_url.replace("http", "git", 1),
        "ssh_url": site.ssh_url,
        "clone_url": site.clone_url,
        "default_branch": site.default_branch,
        "master_branch": site.default_branch,
    }


def _github_user(facts: PushFacts) -> Payload:
    return {"login": facts.pusher, "id": 1, "type": "User"}


# Gitea and Forgejo ------------------------------------------------------------------------


def _gitea_events(facts: PushFacts, site: RepoSite, *, forgejo: bool) -> list[Event]:
    change, repo, user = facts.change, _gitea_repo(site), _gitea_user(facts.pusher)
    push: Event = ("push", gitea_push(facts, site, forgejo=forgejo))
    if change.deleted:
        deleted: Event = ("delete", _ref_event(facts, site, repo, user, github=False))
        return [push, deleted] if change.is_tag else [deleted]
    if change.created:
        created: Event = ("create", _ref_event(facts, site, repo, user, github=False))
        return [push, created] if change.is_tag else [created, push]
    return [push]


def gitea_push(facts: PushFacts, site: RepoSite, *, forgejo: bool = False) -> Payload:
    """Gitea's push payload: no created/deleted/forced, commits newest first, at most five."""
    c = facts.change
    listed, total = _gitea_commits(facts)
    payload: Payload = {
        "ref": c.ref,
        "before": c.before,
        "after": c.after,
        "compare_url": f"{site.html_url}/compare/{c.before}...{c.after}",
        "commits": [_gitea_commit(x, site) for x in listed[:GITEA_MAX_COMMITS]],
        "total_commits": total,
        "head_commit": _gitea_commit(facts.head, site) if facts.head else None,
        "repository": _gitea_repo(site),
        "pusher": _gitea_user(facts.pusher),
        "sender": _gitea_user(facts.pusher),
    }
    if forgejo:
        payload["compare"] = payload["compare_url"]
    return payload


def _gitea_commits(facts: PushFacts) -> tuple[tuple[CommitInfo, ...], int]:
    """Tags list nothing; a new branch its last ten commits; an update before..after."""
    if facts.change.is_tag or facts.change.deleted:
        return (), 0
    if facts.change.created:
        return facts.recent, len(facts.recent)
    return facts.pushed, facts.total


def _gitea_commit(commit: CommitInfo, site: RepoSite) -> Payload:
    return {
        "id": commit.id,
        "message": commit.message + "\n",
        "url": f"{site.html_url}/commit/{commit.id}",
        "author": _gitea_person(commit.author.name, commit.author.email),
        "committer": _gitea_person(commit.committer.name, commit.committer.email),
        "verification": None,
        "timestamp": commit.timestamp,
        "added": list(commit.added),
        "removed": list(commit.removed),
        "modified": list(commit.modified),
    }


def _gitea_person(name: str, email: str) -> Payload:
    return {"name": name, "email": email, "username": ""}


def _gitea_repo(site: RepoSite) -> Payload:
    return {
        "id": site.id,
        "owner": _gitea_user(site.owner),
        "name": site.name,
        "full_name": site.full_name,
        "description": "",
        "empty": False,
        "private": False,
        "fork": False,
        "mirror": False,
        "html_url": site.html_url,
        "ssh_url": site.ssh_url,
        "clone_url": site.clone_url,
        "default_branch": site.default_branch,
    }


def _gitea_user(login: str) -> Payload:
    return {
        "id": 1,
        "login": login,
        "login_name": "",
        "full_name": "",
        "email": _email(login),
        "avatar_url": "",
        "username": login,
    }


def _ref_event(
    facts: PushFacts, site: RepoSite, repo: Payload, sender: Payload, *, github: bool
) -> Payload:
    """A create/delete payload: the short ref name and its type (GitHub and Gitea share it).

    GitHub's create adds ``master_branch``/``description``; Gitea's ``CreatePayload`` adds
    the ref's new value as ``sha``; both deletes carry ``pusher_type``.
    """
    c = facts.change
    payload: Payload = {"ref": c.short_name, "ref_type": c.ref_type}
    if c.created and github:
        payload.update(
            {"master_branch": site.default_branch, "description": None, "pusher_type": "user"}
        )
    elif c.created:
        payload["sha"] = c.after
    else:
        payload["pusher_type"] = "user"
    payload.update({"repository": repo, "sender": sender})
    return payload


# GitLab -----------------------------------------------------------------------------------


def _gitlab_events(facts: PushFacts, site: RepoSite) -> list[Event]:
    if facts.change.is_tag:
        return [("tag_push", gitlab_push(facts, site, kind="tag_push"))]
    if facts.branch_changes > GITLAB_PUSH_BRANCH_LIMIT:
        return []
    return [("push", gitlab_push(facts, site, kind="push"))]


def gitlab_push(facts: PushFacts, site: RepoSite, *, kind: str = "push") -> Payload:
    """GitLab's push (or tag push) payload: no deleted flag, a null checkout_sha on delete."""
    c = facts.change
    commits = list(reversed(facts.pushed[:GITLAB_MAX_COMMITS]))
    return {
        "object_kind": kind,
        "event_name": kind,
        "before": c.before,
        "after": c.after,
        "ref": c.ref,
        "ref_protected": False,
        "checkout_sha": facts.head.id if facts.head else None,
        "message": None,
        "user_id": 1,
        "user_name": facts.pusher,
        "user_username": facts.pusher,
        "user_email": _email(facts.pusher),
        "user_avatar": None,
        "project_id": site.id,
        "project": _gitlab_project(site),
        "commits": [_gitlab_commit(x, site) for x in commits],
        "total_commits_count": facts.total,
        "push_options": {},
        "repository": {
            "name": site.name,
            "url": site.ssh_url,
            "description": "",
            "homepage": site.html_url,
            "git_http_url": site.clone_url,
            "git_ssh_url": site.ssh_url,
            "visibility_level": 20,
        },
    }


def _gitlab_project(site: RepoSite) -> Payload:
    return {
        "id": site.id,
        "name": site.name,
        "description": "",
        "web_url": site.html_url,
        "avatar_url": None,
        "git_ssh_url": site.ssh_url,
        "git_http_url": site.clone_url,
        "namespace": site.owner,
        "visibility_level": 20,
        "path_with_namespace": site.full_name,
        "default_branch": site.default_branch,
        "homepage": site.html_url,
        "url": site.ssh_url,
        "ssh_url": site.ssh_url,
        "http_url": site.clone_url,
    }


def _gitlab_commit(commit: CommitInfo, site: RepoSite) -> Payload:
    return {
        "id": commit.id,
        "message": commit.message,
        "title": commit.message.split("\n", 1)[0],
        "timestamp": commit.timestamp,
        "url": f"{site.html_url}/-/commit/{commit.id}",
        "author": {"name": commit.author.name, "email": commit.author.email},
        "added": list(commit.added),
        "modified": list(commit.modified),
        "removed": list(commit.removed),
    }


def _email(login: str) -> str:
    return f"{login}@sandbox.invalid"
