"""generic-hmac, any sender (Flux's generic-hmac, facts: webhooks-git-libs.md §1.6):
``X-Signature: sha256=<hex>`` over the raw body; any JSON object is a push, ``ref``/``after``
optional. Such a delivery never names its repository (``Push.anonymous``): it is tied to the
GitProvider by its secret alone."""

from __future__ import annotations

from collections.abc import Mapping

from services.receiver.payloads import Json, Parsed, Push, single_push, text
from services.receiver.signatures import Verdict, Verified, check_prefixed


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """``X-Signature: sha256=<hex>`` over the raw body."""
    refused = check_prefixed(headers, "X-Signature", body, secret)
    return refused or Verified(body)


def read(event: str, delivery: str, body: Json) -> Parsed:
    """A push of ``ref`` when the object names one, else of every branch (``event`` is unused:
    the sender names no event)."""
    ref = text(body, "ref")
    if not ref:
        return Push("push", delivery, (), (), every_branch=True, anonymous=True)
    push = single_push("push", delivery, body, ())
    return Push(push.event, push.delivery, (), push.updates, anonymous=True)
