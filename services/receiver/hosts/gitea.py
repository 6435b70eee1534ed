"""Gitea and Forgejo (facts: webhooks-git-libs.md §1.2, §1.3): bare hex in
``X-Forgejo-Signature`` > ``X-Gitea-Signature`` > (prefixed) ``X-Hub-Signature-256``, over the
JSON, which for a form delivery is the decoded ``payload``; events ``push`` plus
``create``/``delete``, whose ``ref`` is the short name (a branch delete raises only
``delete``), and ``ping``."""

from __future__ import annotations

from collections.abc import Mapping

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
    repository_urls,
    sha,
    single_push,
    text,
)
from services.receiver.signatures import (
    FORM,
    Refused,
    Verdict,
    Verified,
    check,
    form_payload,
    header,
    media_type,
    prefixed,
)

_REPO = ("clone_url", "html_url", "ssh_url", "full_name")  # of ``repository``


def _signature(headers: Mapping[str, str]) -> str:
    for name in ("X-Forgejo-Signature", "X-Gitea-Signature"):
        value = header(headers, name).strip()
        if value:
            return value
    hub = header(headers, "X-Hub-Signature-256")
    return (prefixed(hub) or "") if hub else ""


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """HMAC-SHA256 of the JSON, which a form delivery carries in ``payload``."""
    signed = body
    if media_type(content_type) == FORM:
        payload = form_payload(body)
        if payload is None:
            return Refused("form delivery without a single payload field")
        signed = payload
    refused = check(secret, signed, _signature(headers), "Gitea/Forgejo")
    return refused or Verified(signed)


def read(event: str, delivery: str, body: Json) -> Parsed:
    """``push``, and ``create``/``delete`` of a ref (short name), ``ping``."""
    repos = repository_urls(body, _REPO)
    if event == "ping":
        return Ping(event, delivery)
    if event == "push":
        return single_push(event, delivery, body, repos)
    if event not in ("create", "delete"):
        return Ignored(event, delivery)
    ref = full_ref(text(body, "ref"), text(body, "ref_type"))
    if not ref:
        raise Malformed(f"{event} event without a ref of a known type")
    after = sha(body.get("sha")) if event == "create" else ZERO_SHA
    return Push(event, delivery, repos, (RefUpdate(ref, after),))
