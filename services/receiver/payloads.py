"""What a verified delivery says, as records, and the careful readers every host's parser uses.

The parsers are one per Git host (``services.receiver.hosts``). Every optional field is
checked before use (``get``, ``text``, ``sha`` never raise on a missing or mistyped field):
payload handlers that indexed optional fields unchecked are how Argo CD's webhook endpoint was
crashed by crafted deliveries (facts: webhooks-git-libs.md §1.7). A body that is not a JSON
object raises ``Malformed`` (400); a push without a usable ref is malformed too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ZERO_SHA = "0" * 40
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
Json = dict[str, Any]


class Malformed(ValueError):
    """The verified body is not what its event promises (answered 400)."""


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """One ref a delivery says moved, and where it says it points now (a hint)."""

    ref: str
    after: str  # "" when the delivery gave no usable commit id


@dataclass(frozen=True, slots=True)
class Push:
    """A delivery that says refs moved."""

    event: str
    delivery: str
    repositories: tuple[str, ...]  # the repository URLs or paths the payload names (may be none)
    updates: tuple[RefUpdate, ...]
    every_branch: bool = False  # names no ref: any branch of the repository may have moved
    #: generic-hmac: a kind of delivery that never names its repository, tied to the
    #: GitProvider by its secret alone; a host's push that names none is not believed.
    anonymous: bool = False


@dataclass(frozen=True, slots=True)
class Ping:
    """The host checking that the hook works."""

    event: str
    delivery: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """Any other event: verified, answered 202, not stored."""

    event: str
    delivery: str


Parsed = Push | Ping | Ignored


def load_object(document: bytes) -> Json:
    """The JSON object of a verified body; Malformed for anything else."""
    try:
        value = json.loads(document)
    except (ValueError, RecursionError) as err:
        raise Malformed("the body is not valid JSON") from err
    if not isinstance(value, dict):
        raise Malformed("the body is not a JSON object")
    return value


def get(value: Any, *path: str) -> Any:
    """The value at ``path`` in nested objects; None where any step is not an object."""
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def text(value: Any, *path: str) -> str:
    """The string at ``path`` ("" when absent or not a string)."""
    found = get(value, *path)
    return found if isinstance(found, str) else ""


def sha(value: Any) -> str:
    """A commit id (SHA-1 or SHA-256 hex, lower-cased), or "" for anything else."""
    lowered = value.lower() if isinstance(value, str) else ""
    return lowered if _SHA.fullmatch(lowered) else ""


def urls(body: Json, *paths: tuple[str, ...]) -> tuple[str, ...]:
    """The non-empty strings at ``paths``, in that order."""
    return tuple(u for u in (text(body, *p) for p in paths) if u)


def repository_urls(body: Json, fields: tuple[str, ...]) -> tuple[str, ...]:
    """The non-empty strings among ``repository.<field>`` (``urls`` for one object, in one
    pass: GitHub and Gitea name their repository there, on every delivery)."""
    repository = body.get("repository")
    if not isinstance(repository, dict):
        return ()
    return tuple(u for u in map(repository.get, fields) if isinstance(u, str) and u)


def full_ref(ref: str, ref_type: str) -> str:
    """A full ref name from a short one and its type ("" for a type that is neither)."""
    if ref.startswith("refs/"):
        return ref
    return {"branch": f"refs/heads/{ref}", "tag": f"refs/tags/{ref}"}.get(ref_type, "")


def single_push(event: str, delivery: str, body: Json, repos: tuple[str, ...]) -> Push:
    """A push of the body's one full ``ref`` to its ``after``; Malformed without a full ref."""
    ref = text(body, "ref")
    if not ref.startswith("refs/"):
        raise Malformed(f"{event} event without a full ref")
    return Push(event, delivery, repos, (RefUpdate(ref, sha(body.get("after"))),))
