"""GitLab (facts: webhooks-git-libs.md §1.4): ``X-Gitlab-Token`` is the secret itself (no
signature over the body); ``Push Hook`` and ``Tag Push Hook`` (and system hooks of those
kinds), a delete having a zero ``after``; GitLab sends no ping."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from services.receiver.payloads import Ignored, Json, Parsed, single_push, text, urls
from services.receiver.signatures import Refused, Verdict, Verified, header, wire_bytes

_EVENTS = frozenset({"Push Hook", "Tag Push Hook", "System Hook"})
_REPO = (
    ("project", "git_http_url"),
    ("project", "git_ssh_url"),
    ("project", "web_url"),
    ("project", "path_with_namespace"),
    ("repository", "git_http_url"),
    ("repository", "git_ssh_url"),
)


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """``X-Gitlab-Token`` must equal the secret (compared in constant time)."""
    if not secret:
        return Refused("the receiver has no usable secret")
    token = header(headers, "X-Gitlab-Token")
    if not token:
        return Refused("no X-Gitlab-Token")
    if not hmac.compare_digest(wire_bytes(token), secret):
        return Refused("X-Gitlab-Token does not match")
    return Verified(body)


def read(event: str, delivery: str, body: Json) -> Parsed:
    """Push and tag push hooks (also as system hooks)."""
    if event not in _EVENTS or text(body, "object_kind") not in ("push", "tag_push"):
        return Ignored(event, delivery)
    return single_push(event, delivery, body, urls(body, *_REPO))
