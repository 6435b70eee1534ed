"""Azure DevOps (Services and Server) service hooks, the "Web Hooks" consumer.

Azure DevOps signs nothing: a service hook can send "Basic authentication" credentials, which
arrive as ``Authorization: Basic base64(username:password)``; the password is the receiver's
secret (compared in constant time), the username is whatever the hook says and is not checked.
The hook names its event in the body (``eventType``; a push is ``git.push``), each moved ref in
``resource.refUpdates[]`` (``name``, ``newObjectId``, all zeros for a delete), and the
repository in ``resource.repository`` (``remoteUrl``, ``sshUrl``). Its requests carry an
``X-Vss-ActivityId`` header (the one Argo CD recognises them by, facts: webhooks-git-libs.md
§1.7); the notification's own ``id`` in the body, which a retry repeats, is the delivery id.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping
from typing import Any

from services.receiver.payloads import (
    Ignored,
    Json,
    Malformed,
    Parsed,
    Push,
    RefUpdate,
    get,
    sha,
    text,
    urls,
)
from services.receiver.signatures import Refused, Verdict, Verified, header, wire_bytes

#: The event of a push (a service hook subscription's "Code pushed").
PUSH = "git.push"
_REPO = (
    ("resource", "repository", "remoteUrl"),
    ("resource", "repository", "sshUrl"),
    ("resource", "repository", "webUrl"),
)


def _password(authorization: str) -> bytes | None:
    """The password of an ``Authorization: Basic`` value; None when it is not one."""
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return None
    sent = wire_bytes(encoded.strip())
    try:
        decoded = base64.b64decode(sent, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(decoded) != sent:
        return None  # only the one canonical spelling of the credentials
    _user, colon, password = decoded.partition(b":")
    return password if colon else None


def verify(headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes) -> Verdict:
    """``Authorization: Basic`` whose password equals the secret (constant time)."""
    if not secret:
        return Refused("the receiver has no usable secret")
    authorization = header(headers, "Authorization")
    if not authorization:
        return Refused("no Authorization (set the service hook's basic authentication)")
    password = _password(authorization)
    if password is None:
        return Refused("Authorization is not HTTP basic credentials")
    if not hmac.compare_digest(password, secret):
        return Refused("the basic authentication password does not match")
    return Verified(body)


def _update(item: Any) -> RefUpdate | None:
    ref = text(item, "name")
    if not ref.startswith("refs/"):
        return None
    return RefUpdate(ref, sha(get(item, "newObjectId")))


def read(event: str, delivery: str, body: Json) -> Parsed:
    """``git.push``; every other event is answered and ignored."""
    event = event or text(body, "eventType")
    delivery = text(body, "id") or delivery
    if event != PUSH:
        return Ignored(event or "unnamed", delivery)
    raw = get(body, "resource", "refUpdates")
    if not isinstance(raw, list):
        raise Malformed("git.push event without resource.refUpdates")
    updates = tuple(u for u in (_update(i) for i in raw) if u is not None)
    return Push(event, delivery, urls(body, *_REPO), updates)
