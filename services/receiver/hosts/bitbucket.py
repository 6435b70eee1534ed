"""Bitbucket Cloud and Data Center (facts: webhooks-git-libs.md §1.5): ``X-Hub-Signature:
sha256=<hex>`` over the raw body (a SHA-256 value under GitHub's SHA-1 header name); Cloud
``repo:push`` (``push.changes[]``) and Data Center ``repo:refs_changed`` (``changes[]``),
``diagnostics:ping``. Cloud names its repository by ``full_name``, Data Center by its project
key and slug, which older Data Center payloads give without any link."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.receiver.payloads import (
    ZERO_SHA,
    Ignored,
    Json,
    Malformed,
    Parsed,
    Ping,
    Push,
    RefUpdate,
    full_ref,
    get,
    sha,
    text,
    urls,
)
from services.receiver.signatures import Verdict, Verified, check_prefixed, raw_body_document

_CLOUD_REPO = (("repository", "links", "html", "href"), ("repository", "full_name"))


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """``X-Hub-Signature: sha256=<hex>`` over the raw body."""
    refused = check_prefixed(headers, "X-Hub-Signature", body, secret)
    return refused or Verified(raw_body_document(body, content_type))


def _cloud_change(change: Any) -> RefUpdate | None:
    new, old = get(change, "new"), get(change, "old")
    side = new if isinstance(new, dict) else old
    ref = full_ref(text(side, "name"), text(side, "type"))
    if not ref:
        return None
    after = sha(get(new, "target", "hash")) if isinstance(new, dict) else ZERO_SHA
    return RefUpdate(ref, after)


def _server_change(change: Any) -> RefUpdate | None:
    ref = text(change, "refId") or text(change, "ref", "id")
    if not ref.startswith("refs/"):
        return None
    after = ZERO_SHA if text(change, "type") == "DELETE" else sha(get(change, "toHash"))
    return RefUpdate(ref, after)


def _changes(raw: Any, read: Callable[[Any], RefUpdate | None]) -> tuple[RefUpdate, ...]:
    if not isinstance(raw, list):
        raise Malformed("push event without a list of changes")
    return tuple(u for u in (read(c) for c in raw) if u is not None)


def _server_repositories(body: Json) -> tuple[str, ...]:
    """The clone links, when the payload has them, and ``<project key>/<slug>`` (an HTTP clone
    URL is ``.../scm/<key>/<slug>.git``, an SSH one ``.../<key>/<slug>.git``)."""
    clones = get(body, "repository", "links", "clone")
    links = [text(c, "href") for c in clones] if isinstance(clones, list) else []
    key, slug = text(body, "repository", "project", "key"), text(body, "repository", "slug")
    # A segment with a separator in it would name another path (or look like ``host:path``).
    if key and slug and not any(c in key + slug for c in "/:"):
        links.append(f"{key}/{slug}")
    return tuple(u for u in links if u)


def read(event: str, delivery: str, body: Json) -> Parsed:
    """Cloud ``repo:push`` and Data Center ``repo:refs_changed``; ``diagnostics:ping``."""
    if event == "diagnostics:ping":
        return Ping(event, delivery)
    if event == "repo:push":
        updates = _changes(get(body, "push", "changes"), _cloud_change)
        return Push(event, delivery, urls(body, *_CLOUD_REPO), updates)
    if event == "repo:refs_changed":
        updates = _changes(body.get("changes"), _server_change)
        return Push(event, delivery, _server_repositories(body), updates)
    return Ignored(event, delivery)
