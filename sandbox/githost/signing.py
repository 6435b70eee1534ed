"""The bytes and headers of one webhook request, as each provider encodes and signs them.

Facts (../shared/facts/webhooks-git-libs.md):

- §1.1 GitHub signs the raw request body with HMAC-SHA256 (``X-Hub-Signature-256: sha256=``)
  and HMAC-SHA1 (``X-Hub-Signature: sha1=``); for the form content type that raw body is the
  urlencoded ``payload=...``. Without a secret there are no signature headers.
- §1.2/§1.3 Gitea and Forgejo sign the JSON itself, even when it travels inside the form field
  ``payload``; they send every X-Gitea-*/X-Gogs-*/X-Hub-Signature(-256)/X-GitHub-* header (and
  X-Forgejo-*), bare hex in X-Gitea-Signature, and empty signatures (``sha256=``) when the hook
  has no secret. Their JSON is indented by two spaces (``json.MarshalIndent(p, "", "  ")``).
  Gitea sets no User-Agent, so Go's default goes out.
- §1.4 GitLab sends the plain secret in ``X-Gitlab-Token`` and names the event in
  ``X-Gitlab-Event`` (``Push Hook``, ``Tag Push Hook``).
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sandbox.githost.hooks import Hook

GITHUB_USER_AGENT = "GitHub-Hookshot/sandbox"
GO_USER_AGENT = "Go-http-client/1.1"
GITLAB_USER_AGENT = "GitLab/17.6.0"
GITLAB_EVENT_NAMES = {"push": "Push Hook", "tag_push": "Tag Push Hook"}
CONTENT_TYPES = {"json": "application/json", "form": "application/x-www-form-urlencoded"}


@dataclass(frozen=True, slots=True)
class Envelope:
    """Who is sending: the hook, its numeric id and uuid, the repository id and the site URL."""

    hook: Hook
    hook_number: int
    hook_uuid: str
    repo_id: int
    instance_url: str


def hmac_hex(secret: str, data: bytes, digest: str = "sha256") -> str:
    """Hex HMAC of ``data`` keyed with ``secret``."""
    return hmac.new(secret.encode(), data, digest).hexdigest()


def encode(
    env: Envelope, event: str, payload: dict[str, Any], delivery_id: str
) -> tuple[dict[str, str], bytes]:
    """The headers and body the provider of ``env.hook`` sends for ``event``."""
    provider = env.hook.provider
    if provider == "github":
        return _github(env, event, payload, delivery_id)
    if provider in ("gitea", "forgejo"):
        return _gitea(env, event, payload, delivery_id)
    return _gitlab(env, event, payload, delivery_id)


def _github(
    env: Envelope, event: str, payload: dict[str, Any], delivery_id: str
) -> tuple[dict[str, str], bytes]:
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    body = _body(env.hook, text)
    headers = {
        "Content-Type": CONTENT_TYPES[env.hook.content_type],
        "User-Agent": GITHUB_USER_AGENT,
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Event": event,
        "X-GitHub-Hook-ID": str(env.hook_number),
        "X-GitHub-Hook-Installation-Target-ID": str(env.repo_id),
        "X-GitHub-Hook-Installation-Target-Type": "repository",
    }
    if env.hook.secret:
        headers["X-Hub-Signature"] = "sha1=" + hmac_hex(env.hook.secret, body, "sha1")
        headers["X-Hub-Signature-256"] = "sha256=" + hmac_hex(env.hook.secret, body)
    return headers, body


def _gitea(
    env: Envelope, event: str, payload: dict[str, Any], delivery_id: str
) -> tuple[dict[str, str], bytes]:
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    signed = text.encode()
    sha1 = sha256 = ""
    if env.hook.secret:
        sha1 = hmac_hex(env.hook.secret, signed, "sha1")
        sha256 = hmac_hex(env.hook.secret, signed)
    headers = {"Content-Type": CONTENT_TYPES[env.hook.content_type], "User-Agent": GO_USER_AGENT}
    vendors = ("Forgejo", "Gitea", "Gogs") if env.hook.provider == "forgejo" else ("Gitea", "Gogs")
    for vendor in vendors:
        headers[f"X-{vendor}-Delivery"] = delivery_id
        headers[f"X-{vendor}-Event"] = event
        headers[f"X-{vendor}-Event-Type"] = event
        headers[f"X-{vendor}-Signature"] = sha256
    headers["X-Hub-Signature"] = "sha1=" + sha1
    headers["X-Hub-Signature-256"] = "sha256=" + sha256
    headers["X-GitHub-Delivery"] = delivery_id
    headers["X-GitHub-Event"] = event
    headers["X-GitHub-Event-Type"] = event
    return headers, _body(env.hook, text)


def _gitlab(
    env: Envelope, event: str, payload: dict[str, Any], delivery_id: str
) -> tuple[dict[str, str], bytes]:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    headers = {
        "Content-Type": CONTENT_TYPES["json"],
        "User-Agent": GITLAB_USER_AGENT,
        "Idempotency-Key": delivery_id,
        "X-Gitlab-Event": GITLAB_EVENT_NAMES[event],
        "X-Gitlab-Webhook-UUID": env.hook_uuid,
        "X-Gitlab-Instance": env.instance_url,
        "X-Gitlab-Event-UUID": delivery_id,
    }
    if env.hook.secret:
        headers["X-Gitlab-Token"] = env.hook.secret
    return headers, body


def _body(hook: Hook, text: str) -> bytes:
    """The JSON as is, or inside the form field ``payload`` (Go's url.Values.Encode escaping)."""
    if hook.content_type == "form":
        return urlencode({"payload": text}).encode()
    return text.encode()
