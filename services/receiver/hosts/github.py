"""GitHub (facts: webhooks-git-libs.md §1.1): ``X-Hub-Signature-256: sha256=<hex>`` over the
raw body, also the raw ``payload=...`` form body; events ``push`` and ``ping`` (its
``create``/``delete`` come with a ``push`` anyway); the repository in ``repository``."""

from __future__ import annotations

from collections.abc import Mapping

from services.receiver.payloads import Ignored, Json, Parsed, Ping, repository_urls, single_push
from services.receiver.signatures import Verdict, Verified, check_prefixed, raw_body_document

_REPO = ("clone_url", "html_url", "ssh_url", "git_url", "full_name")  # of ``repository``


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """HMAC-SHA256 of the raw body (the form body as sent, for form deliveries)."""
    refused = check_prefixed(headers, "X-Hub-Signature-256", body, secret)
    return refused or Verified(raw_body_document(body, content_type))


def read(event: str, delivery: str, body: Json) -> Parsed:
    """``push`` or ``ping``; everything else is ignored."""
    if event == "ping":
        return Ping(event, delivery)
    if event != "push":
        return Ignored(event, delivery)
    return single_push(event, delivery, body, repository_urls(body, _REPO))
