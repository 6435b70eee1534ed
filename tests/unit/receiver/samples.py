"""Real-looking webhook deliveries for every provider and content type, signed as each host signs.

Built from ../shared/facts/webhooks-git-libs.md §1.1-1.6 (headers, what is signed, payload
fields) and, for Bitbucket payload shapes, Atlassian's event-payload pages
(https://confluence.atlassian.com/bitbucketserver/event-payload-938025882.html; Cloud:
https://support.atlassian.com/bitbucket-cloud/docs/event-payloads/); for Azure DevOps,
Microsoft's sample ``git.push`` service hook event
(https://learn.microsoft.com/azure/devops/service-hooks/events). Signatures are computed
here with ``hmac`` directly, never with the product's verifiers or the sandbox's signing code.
No tests in this module.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

SECRET = b"It's a Secret to Everybody"
REPO_URL = "https://git.example.com/team/apps.git"
AFTER = "c2ad7e2f3e4d5c6b7a8990a1b2c3d4e5f6a7b8c9"
BEFORE = "079d1c0a1b2c3d4e5f60718293a4b5c6d7e8f901"
ZERO = "0" * 40
JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Delivery:
    """Headers, raw body and content type of one request, and the JSON it carries."""

    headers: dict[str, str]
    body: bytes
    content_type: str
    document: bytes

    def with_header(self, name: str, value: str | None) -> Delivery:
        headers = {k: v for k, v in self.headers.items() if k.lower() != name.lower()}
        if value is not None:
            headers[name] = value
        return replace(self, headers=headers)


def mac(data: bytes, secret: bytes = SECRET, digest: str = "sha256") -> str:
    return hmac.new(secret, data, getattr(hashlib, digest)).hexdigest()


def _encode(payload: dict[str, Any], indent: int | None = None) -> bytes:
    return json.dumps(payload, indent=indent, separators=None if indent else (",", ":")).encode()


def _framed(document: bytes, form: bool) -> tuple[bytes, str]:
    if form:
        return urlencode({"payload": document.decode()}).encode(), FORM_TYPE
    return document, JSON_TYPE


def github_push(ref: str = "refs/heads/main", after: str = AFTER) -> dict[str, Any]:
    """Facts §1.1: ref, before/after, created/deleted/forced, repository URLs, pusher."""
    return {
        "ref": ref,
        "before": BEFORE,
        "after": after,
        "created": False,
        "deleted": after == ZERO,
        "forced": False,
        "base_ref": None,
        "compare": "https://git.example.com/team/apps/compare/x...y",
        "commits": [],
        "head_commit": None,
        "repository": {
            "id": 1,
            "name": "apps",
            "full_name": "team/apps",
            "clone_url": REPO_URL,
            "html_url": "https://git.example.com/team/apps",
            "ssh_url": "git@git.example.com:team/apps.git",
            "git_url": "git://git.example.com/team/apps.git",
        },
        "pusher": {"name": "someone", "email": "someone@example.com"},
        "sender": {"login": "someone", "id": 7},
    }


def github(
    payload: dict[str, Any],
    *,
    event: str = "push",
    form: bool = False,
    delivery: str = "gh-1",
    secret: bytes = SECRET,
) -> Delivery:
    """Facts §1.1: X-Hub-Signature-256 over the raw body, also the urlencoded form body."""
    document = _encode(payload)
    body, content_type = _framed(document, form)
    headers = {
        "Content-Type": content_type,
        "User-Agent": "GitHub-Hookshot/abc123",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-GitHub-Hook-ID": "42",
        "X-Hub-Signature": "sha1=" + mac(body, secret, "sha1"),
        "X-Hub-Signature-256": "sha256=" + mac(body, secret),
    }
    return Delivery(headers, body, content_type, document)


def github_ping() -> Delivery:
    """Facts §1.1: the ping names zen, hook_id and hook (with its config)."""
    payload = {
        "zen": "Keep it logically awesome.",
        "hook_id": 42,
        "hook": {"type": "Repository", "config": {"content_type": "json"}},
    }
    return github(payload, event="ping", delivery="gh-ping")


def gitea_push(ref: str = "refs/heads/main", after: str = AFTER) -> dict[str, Any]:
    """Facts §1.2: no created/deleted/forced; compare_url, total_commits, repository URLs."""
    return {
        "ref": ref,
        "before": BEFORE,
        "after": after,
        "compare_url": "https://git.example.com/team/apps/compare/x...y",
        "commits": [],
        "total_commits": 0,
        "head_commit": None,
        "repository": {
            "id": 1,
            "full_name": "team/apps",
            "clone_url": REPO_URL,
            "html_url": "https://git.example.com/team/apps",
            "ssh_url": "git@git.example.com:team/apps.git",
        },
        "pusher": {"login": "someone"},
        "sender": {"login": "someone"},
    }


def gitea_ref_event(ref: str, ref_type: str = "branch", sha: str | None = AFTER) -> dict[str, Any]:
    """Facts §1.2/§1.3: create/delete carry the short ref name and its type."""
    payload: dict[str, Any] = {
        "ref": ref,
        "ref_type": ref_type,
        "repository": gitea_push()["repository"],
        "sender": {"login": "someone"},
    }
    if sha is not None:
        payload["sha"] = sha
    return payload


def gitea(
    payload: dict[str, Any],
    *,
    event: str = "push",
    form: bool = False,
    forgejo: bool = False,
    delivery: str = "gt-1",
    secret: bytes = SECRET,
) -> Delivery:
    """Facts §1.2/§1.3: every vendor header; bare hex over the JSON, even inside a form."""
    document = _encode(payload, indent=2)
    body, content_type = _framed(document, form)
    signature = mac(document, secret)
    headers = {"Content-Type": content_type, "User-Agent": "Go-http-client/1.1"}
    vendors = ("Forgejo", "Gitea", "Gogs") if forgejo else ("Gitea", "Gogs")
    for vendor in vendors:
        headers[f"X-{vendor}-Delivery"] = delivery
        headers[f"X-{vendor}-Event"] = event
        headers[f"X-{vendor}-Event-Type"] = event
        headers[f"X-{vendor}-Signature"] = signature
    headers["X-Hub-Signature"] = "sha1=" + mac(document, secret, "sha1")
    headers["X-Hub-Signature-256"] = "sha256=" + signature
    headers["X-GitHub-Delivery"] = delivery
    headers["X-GitHub-Event"] = event
    return Delivery(headers, body, content_type, document)


def gitlab_push(
    ref: str = "refs/heads/main", after: str = AFTER, kind: str = "push"
) -> dict[str, Any]:
    """Facts §1.4: object_kind push (tag_push), ref, before/after, project URLs."""
    return {
        "object_kind": kind,
        "event_name": kind,
        "ref": ref,
        "before": BEFORE,
        "after": after,
        "checkout_sha": None if after == ZERO else after,
        "user_username": "someone",
        "project": {
            "id": 3,
            "path_with_namespace": "team/apps",
            "web_url": "https://git.example.com/team/apps",
            "git_http_url": REPO_URL,
            "git_ssh_url": "git@git.example.com:team/apps.git",
        },
        "commits": [],
        "total_commits_count": 0,
        "repository": {"name": "apps", "git_http_url": REPO_URL},
    }


def gitlab(
    payload: dict[str, Any],
    *,
    event: str = "Push Hook",
    delivery: str = "gl-1",
    token: bytes = SECRET,
) -> Delivery:
    """Facts §1.4: the plain token in X-Gitlab-Token; event and delivery UUID headers."""
    document = _encode(payload)
    headers = {
        "Content-Type": JSON_TYPE,
        "User-Agent": "GitLab/17.6.0",
        "X-Gitlab-Event": event,
        "X-Gitlab-Event-UUID": delivery,
        "Idempotency-Key": delivery,
        "X-Gitlab-Webhook-UUID": "0b8e2f1c-hook",
        "X-Gitlab-Instance": "https://git.example.com",
        "X-Gitlab-Token": token.decode(),
    }
    return Delivery(headers, document, JSON_TYPE, document)


def bitbucket_cloud_push(branch: str = "main", after: str | None = AFTER) -> dict[str, Any]:
    """Bitbucket Cloud repo:push: push.changes[] with new/old {type, name, target.hash}."""
    new = None if after is None else {"type": "branch", "name": branch, "target": {"hash": after}}
    return {
        "actor": {"display_name": "someone"},
        "repository": {
            "full_name": "team/apps",
            "links": {"html": {"href": "https://bitbucket.org/team/apps"}},
        },
        "push": {
            "changes": [
                {
                    "new": new,
                    "old": {"type": "branch", "name": branch, "target": {"hash": BEFORE}},
                    "created": False,
                    "forced": False,
                    "closed": after is None,
                }
            ]
        },
    }


def bitbucket_server_push(
    ref: str = "refs/heads/main",
    kind: str = "UPDATE",
    *,
    key: str = "TEAM",
    slug: str = "apps",
    links: bool = True,
) -> dict[str, Any]:
    """Bitbucket Data Center repo:refs_changed: changes[] with ref, refId, fromHash, toHash.

    The repository is the event-payload page's (slug, id, name, scmId, state, project key),
    which has no ``links``: a server names its repository only by project key and slug there;
    ``links=True`` adds the clone links other deliveries carry."""
    repository: dict[str, Any] = {
        "slug": slug,
        "id": 84,
        "name": slug,
        "hierarchyId": "af05451fc6eb4bbbd1d8",
        "scmId": "git",
        "state": "AVAILABLE",
        "statusMessage": "Available",
        "forkable": True,
        "project": {"key": key, "id": 84, "name": key.title(), "public": False, "type": "NORMAL"},
        "public": False,
    }
    if links:
        repository["links"] = {
            "clone": [
                {"href": f"ssh://git@git.example.com:7999/{key.lower()}/{slug}.git", "name": "ssh"},
                {"href": f"https://git.example.com/scm/{key.lower()}/{slug}.git", "name": "http"},
            ]
        }
    return {
        "eventKey": "repo:refs_changed",
        "date": "2026-11-29T10:00:00+0000",
        "actor": {"name": "someone"},
        "repository": repository,
        "changes": [
            {
                "ref": {"id": ref, "displayId": ref.rsplit("/", 1)[-1], "type": "BRANCH"},
                "refId": ref,
                "fromHash": BEFORE,
                "toHash": AFTER,
                "type": kind,
            }
        ],
    }


def bitbucket(
    payload: dict[str, Any],
    *,
    event: str = "repo:push",
    delivery: str = "bb-1",
    secret: bytes = SECRET,
    cloud: bool = True,
) -> Delivery:
    """Facts §1.5: X-Hub-Signature carries sha256=<hex> of the raw body (GitHub's SHA-1 name)."""
    document = _encode(payload)
    headers = {
        "Content-Type": JSON_TYPE,
        "X-Event-Key": event,
        "X-Hub-Signature": "sha256=" + mac(document, secret),
    }
    headers["X-Request-UUID" if cloud else "X-Request-Id"] = delivery
    return Delivery(headers, document, JSON_TYPE, document)


def basic_auth(username: str, password: bytes) -> str:
    """An ``Authorization`` value of HTTP basic credentials."""
    return "Basic " + base64.b64encode(username.encode() + b":" + password).decode()


def azure_devops_push(
    ref: str = "refs/heads/main",
    after: str = AFTER,
    remote_url: str = "https://dev.azure.com/team/platform/_git/apps",
) -> dict[str, Any]:
    """Azure DevOps service hook ``git.push`` (the shape of Microsoft's sample event):
    resource.refUpdates[] with name/oldObjectId/newObjectId, resource.repository URLs."""
    return {
        "subscriptionId": "00000000-0000-0000-0000-000000000000",
        "notificationId": 3,
        "id": "03c164c2-8912-4d5e-8009-3707d5f83734",
        "eventType": "git.push",
        "publisherId": "tfs",
        "message": {"text": "Someone pushed updates to apps:main."},
        "resource": {
            "commits": [{"commitId": after, "comment": "Fixed bug in web.config file"}],
            "refUpdates": [{"name": ref, "oldObjectId": BEFORE, "newObjectId": after}],
            "repository": {
                "id": "278d5cd2-584d-4b63-824a-2ba458937249",
                "name": "apps",
                "url": "https://dev.azure.com/team/_apis/git/repositories/278d5cd2",
                "project": {"id": "6ce954b1", "name": "platform"},
                "remoteUrl": remote_url,
            },
            "pushedBy": {"displayName": "Someone", "uniqueName": "someone@example.com"},
            "pushId": 14,
        },
        "resourceVersion": "1.0",
        "createdDate": "2026-12-06T09:00:00.000Z",
    }


def azure_devops(
    payload: dict[str, Any], *, password: bytes = SECRET, activity: str = "a-1"
) -> Delivery:
    """A service hook's POST: basic authentication (the password is the token), JSON."""
    document = _encode(payload)
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Authorization": basic_auth("gitops-reverser", password),
        "X-Vss-ActivityId": activity,
    }
    return Delivery(headers, document, JSON_TYPE, document)


def generic(payload: dict[str, Any], *, delivery: str = "", secret: bytes = SECRET) -> Delivery:
    """Facts §1.6 (Flux's generic-hmac): X-Signature: sha256=<hex> of the raw body."""
    document = _encode(payload)
    headers = {"Content-Type": JSON_TYPE, "X-Signature": "sha256=" + mac(document, secret)}
    if delivery:
        headers["X-Delivery-Id"] = delivery
    return Delivery(headers, document, JSON_TYPE, document)


def every_kind() -> dict[str, Delivery]:
    """One valid push delivery per receiver type and content type."""
    return {
        "github-json": github(github_push()),
        "github-form": github(github_push(), form=True),
        "gitea-json": gitea(gitea_push()),
        "gitea-form": gitea(gitea_push(), form=True),
        "forgejo-json": gitea(gitea_push(), forgejo=True),
        "forgejo-form": gitea(gitea_push(), form=True, forgejo=True),
        "gitlab": gitlab(gitlab_push()),
        "bitbucket-cloud": bitbucket(bitbucket_cloud_push()),
        "bitbucket-server": bitbucket(
            bitbucket_server_push(), event="repo:refs_changed", cloud=False
        ),
        "azure-devops": azure_devops(azure_devops_push(remote_url=REPO_URL)),
        "generic-hmac": generic({"ref": "refs/heads/main", "after": AFTER}, delivery="g-1"),
    }


def _host_delivery(name: str, payload: dict[str, Any]) -> Delivery:
    """``payload`` sent as the host of ``every_kind()[name]`` sends a push (JSON)."""
    if name.startswith("github"):
        return github(payload)
    if name.startswith(("gitea", "forgejo")):
        return gitea(payload, forgejo=name.startswith("forgejo"))
    if name == "gitlab":
        return gitlab(payload)
    if name == "bitbucket-cloud":
        return bitbucket(payload)
    return bitbucket(payload, event="repo:refs_changed", cloud=False)


def _host_push(name: str) -> dict[str, Any]:
    """The default push payload of the host of ``every_kind()[name]``."""
    if name == "bitbucket-server":
        return bitbucket_server_push()
    makers = {"github": github_push, "gitea": gitea_push, "forgejo": gitea_push}
    makers |= {"gitlab": gitlab_push, "bitbucket": bitbucket_cloud_push}
    return makers[name.split("-", 1)[0]]()


#: The hosts' push samples of ``every_kind`` (generic-hmac names no repository by design).
HOSTS = (
    "github-json",
    "gitea-json",
    "forgejo-json",
    "gitlab",
    "bitbucket-cloud",
    "bitbucket-server",
)


def named_by_path(name: str, path: str) -> Delivery:
    """The host's push naming its repository by path alone, without any URL: ``full_name``
    (GitHub, Gitea, Bitbucket Cloud), ``project.path_with_namespace`` (GitLab), or the
    project key and slug of a Bitbucket Data Center payload (``path`` is ``KEY/slug``)."""
    payload = _host_push(name)
    if name == "bitbucket-server":
        key, slug = path.split("/")
        payload = bitbucket_server_push(key=key, slug=slug, links=False)
    elif name == "gitlab":
        payload["project"] = {"id": 3, "path_with_namespace": path}
        payload.pop("repository")
    else:
        payload["repository"] = {"id": 1, "full_name": path}
    return _host_delivery(name, payload)


def named_nowhere(name: str) -> Delivery:
    """The host's push with every object that could name its repository left out."""
    payload = _host_push(name)
    for field in ("repository", "project"):
        payload.pop(field, None)
    return _host_delivery(name, payload)


def kind_of(name: str) -> str:
    """The receiver type a sample of ``every_kind`` is for."""
    prefix = name.split("-", 1)[0]
    return {"forgejo": "gitea", "generic": "generic-hmac", "azure": "azure-devops"}.get(
        prefix, prefix
    )
