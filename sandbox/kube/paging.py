"""Lists in chunks: ``limit`` and ``continue``, as kube-apiserver serves them from etcd.

Documented at kubernetes.io/docs/reference/using-api/api-concepts/ ("Retrieving large results
sets in chunks") and in ListMeta / ListOptions:

- ``limit=N`` answers at most N items; when more exist, ``metadata.continue`` holds an opaque
  token, and ``metadata.remainingItemCount`` how many are left (only without label or field
  selectors);
- ``continue=<token>`` answers the next chunk of the same consistent snapshot: every chunk
  carries the first chunk's ``metadata.resourceVersion``; the other query parameters must be
  the same (a ``resourceVersion`` beside ``continue`` is a 400);
- a token whose snapshot is gone (etcd compacted past it, "generally five to fifteen minutes")
  is a ``410`` with reason ``Expired``, whose Status carries a token to continue
  inconsistently, from the next key at the latest state.

Here the snapshot is rebuilt from the store's event history (``Store.snapshot_at``), so a token
expires when the history no longer reaches back to it: the double's compaction. The token's
shape (base64 of a small JSON with the version and the key to start from) mirrors the real
one's, and like it is opaque to clients.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import ApiError, bad_request

Obj = dict[str, Any]
TOKEN_VERSION = "meta.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class Token:
    """Where a chunked list goes on: the snapshot's resourceVersion, and the key after which
    the next chunk starts."""

    rv: int
    after: tuple[str, str]  # (namespace, name) of the last item handed out

    def encode(self) -> str:
        body = {"v": TOKEN_VERSION, "rv": self.rv, "start": "/".join(self.after) + "\x00"}
        return base64.urlsafe_b64encode(json.dumps(body).encode()).decode()

    @classmethod
    def decode(cls, text: str) -> Token:
        try:
            body = json.loads(base64.urlsafe_b64decode(text.encode()))
            rv, start = int(body["rv"]), str(body["start"])
            valid = body.get("v") == TOKEN_VERSION and rv > 0 and start.endswith("\x00")
        except (ValueError, KeyError, TypeError, binascii.Error):
            valid = False
        if not valid:
            raise bad_request(f"continue key is not valid: {text!r}")
        namespace, _, name = start[:-1].rpartition("/")
        return cls(rv, (namespace, name))


def parse_limit(raw: str | None) -> int:
    """``limit``: 0 (unset, or not positive) answers everything."""
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"invalid limit: {raw!r}") from None
    return max(value, 0)


def check_continue(token: str | None, resource_version: str | None) -> Token | None:
    """The decoded ``continue`` token, if any; 400 beside a ``resourceVersion``."""
    if not token:
        return None
    if resource_version:
        raise bad_request("specifying resource version is not allowed when using continue")
    return Token.decode(token)


def key_of(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "")), str(meta["name"]))


@dataclass(frozen=True, slots=True)
class Chunk:
    """One answer of a list: its items and the list metadata to send with them."""

    items: list[Obj]
    metadata: Obj


def chunk(items: list[Obj], rv: int, limit: int, *, selected: bool) -> Chunk:
    """The first ``limit`` of ``items`` (sorted by key, after a token's key already), with the
    token for the rest; ``selected``: a label or field selector filtered them (no count)."""
    metadata: Obj = {"resourceVersion": str(rv)}
    if limit <= 0 or len(items) <= limit:
        return Chunk(items, metadata)
    page = items[:limit]
    metadata["continue"] = Token(rv, key_of(page[-1])).encode()
    if not selected:
        metadata["remainingItemCount"] = len(items) - limit
    return Chunk(page, metadata)


def expired_continue(token: Token, latest_rv: int) -> ApiError:
    """410 Expired for a token whose snapshot is gone, with a token to go on inconsistently
    (from the same key, at the latest state)."""
    message = (
        f"the continue token's snapshot (resourceVersion {token.rv}) is no longer kept: start "
        "the list again without continue for a consistent result, or continue with the token "
        "in this Status for an inconsistent one (objects changed since the first chunk may show)"
    )
    inconsistent = Token(latest_rv, token.after).encode()
    return ApiError(410, "Expired", message, metadata={"continue": inconsistent})
