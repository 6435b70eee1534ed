"""What a verified delivery says: a push (which refs, which repository), a ping, or neither.

Pure functions, one per ``spec.receiver.type``, over the headers and the verified JSON. The
content is believed only as far as R4 needs it (a hint: the tip is always read with
``ls-remote``), and every optional field is checked before use: payload handlers that indexed
optional fields unchecked are how Argo CD's webhook endpoint was crashed by crafted deliveries
(facts: webhooks-git-libs.md §1.7). A body that is not a JSON object raises ``Malformed`` (400);
a push without a usable ref is malformed too.

Events per host (facts §1.1-1.5): GitHub ``push`` and ``ping`` (its ``create``/``delete``
come with a ``push`` anyway); Gitea/Forgejo ``push`` plus ``create``/``delete``, whose ``ref``
is the short name (a branch delete raises only ``delete``); GitLab ``Push Hook`` and
``Tag Push Hook`` (and system hooks of those kinds), a delete having a zero ``after``;
Bitbucket Cloud ``repo:push`` (``push.changes[]``) and Data Center ``repo:refs_changed``
(``changes[]``), ``diagnostics:ping``; generic-hmac: any JSON object, ``ref``/``after`` optional.

Every host's push names its repository, by URL or by path (GitHub and Gitea ``full_name``,
GitLab ``path_with_namespace``, Bitbucket Cloud ``full_name``, Bitbucket Data Center its
project key and slug, which older Data Center payloads give without any link); all of them are
collected, so routing can always check the repository (outside check 8). Only generic-hmac
deliveries name none by design (``Push.anonymous``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.receiver.verify import header
from shared.model.receivers import ReceiverType

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


def _get(value: Any, *path: str) -> Any:
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def _text(value: Any, *path: str) -> str:
    found = _get(value, *path)
    return found if isinstance(found, str) else ""


def _sha(value: Any) -> str:
    text = value.lower() if isinstance(value, str) else ""
    return text if _SHA.fullmatch(text) else ""


def _first(headers: Mapping[str, str], names: Iterable[str]) -> str:
    return next((v for v in (header(headers, n).strip() for n in names) if v), "")


def _urls(body: Json, *paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(u for u in (_text(body, *p) for p in paths) if u)


def _repository_urls(body: Json, fields: tuple[str, ...]) -> tuple[str, ...]:
    """The non-empty strings among ``repository.<field>`` (``_urls`` for one object, in one
    pass: GitHub and Gitea name their repository there, on every delivery)."""
    repository = body.get("repository")
    if not isinstance(repository, dict):
        return ()
    return tuple(u for u in map(repository.get, fields) if isinstance(u, str) and u)


def _full_ref(ref: str, ref_type: str) -> str:
    if ref.startswith("refs/"):
        return ref
    return {"branch": f"refs/heads/{ref}", "tag": f"refs/tags/{ref}"}.get(ref_type, "")


def _single_push(event: str, delivery: str, body: Json, repos: tuple[str, ...]) -> Push:
    ref = _text(body, "ref")
    if not ref.startswith("refs/"):
        raise Malformed(f"{event} event without a full ref")
    return Push(event, delivery, repos, (RefUpdate(ref, _sha(body.get("after"))),))


# GitHub -----------------------------------------------------------------------------------

_GITHUB_REPO = ("clone_url", "html_url", "ssh_url", "git_url", "full_name")  # of ``repository``


def parse_github(headers: Mapping[str, str], body: Json) -> Parsed:
    """GitHub: ``X-GitHub-Event`` ``push`` or ``ping``; everything else is ignored."""
    event = header(headers, "X-GitHub-Event").strip()
    delivery = header(headers, "X-GitHub-Delivery").strip()
    if event == "ping":
        return Ping(event, delivery)
    if event != "push":
        return Ignored(event, delivery)
    return _single_push(event, delivery, body, _repository_urls(body, _GITHUB_REPO))


# Gitea and Forgejo ---------------------------------------------------------------------------

_GITEA_VENDORS = ("Forgejo", "Gitea", "Gogs", "GitHub")
_GITEA_REPO = ("clone_url", "html_url", "ssh_url", "full_name")  # of ``repository``


def parse_gitea(headers: Mapping[str, str], body: Json) -> Parsed:
    """Gitea/Forgejo: ``push``, and ``create``/``delete`` of a ref (short name), ``ping``."""
    event = _first(headers, (f"X-{v}-Event" for v in _GITEA_VENDORS))
    delivery = _first(headers, (f"X-{v}-Delivery" for v in _GITEA_VENDORS))
    repos = _repository_urls(body, _GITEA_REPO)
    if event == "ping":
        return Ping(event, delivery)
    if event == "push":
        return _single_push(event, delivery, body, repos)
    if event not in ("create", "delete"):
        return Ignored(event, delivery)
    ref = _full_ref(_text(body, "ref"), _text(body, "ref_type"))
    if not ref:
        raise Malformed(f"{event} event without a ref of a known type")
    after = _sha(body.get("sha")) if event == "create" else ZERO_SHA
    return Push(event, delivery, repos, (RefUpdate(ref, after),))


# GitLab -----------------------------------------------------------------------------------

_GITLAB_EVENTS = frozenset({"Push Hook", "Tag Push Hook", "System Hook"})
_GITLAB_REPO = (
    ("project", "git_http_url"),
    ("project", "git_ssh_url"),
    ("project", "web_url"),
    ("project", "path_with_namespace"),
    ("repository", "git_http_url"),
    ("repository", "git_ssh_url"),
)


def parse_gitlab(headers: Mapping[str, str], body: Json) -> Parsed:
    """GitLab: push and tag push hooks (also as system hooks); GitLab sends no ping."""
    event = header(headers, "X-Gitlab-Event").strip()
    delivery = _first(headers, ("Idempotency-Key", "X-Gitlab-Event-UUID"))
    if event not in _GITLAB_EVENTS or _text(body, "object_kind") not in ("push", "tag_push"):
        return Ignored(event, delivery)
    return _single_push(event, delivery, body, _urls(body, *_GITLAB_REPO))


# Bitbucket ----------------------------------------------------------------------------------


def _cloud_change(change: Any) -> RefUpdate | None:
    new, old = _get(change, "new"), _get(change, "old")
    side = new if isinstance(new, dict) else old
    ref = _full_ref(_text(side, "name"), _text(side, "type"))
    if not ref:
        return None
    after = _sha(_get(new, "target", "hash")) if isinstance(new, dict) else ZERO_SHA
    return RefUpdate(ref, after)


def _server_change(change: Any) -> RefUpdate | None:
    ref = _text(change, "refId") or _text(change, "ref", "id")
    if not ref.startswith("refs/"):
        return None
    after = ZERO_SHA if _text(change, "type") == "DELETE" else _sha(_get(change, "toHash"))
    return RefUpdate(ref, after)


def _changes(raw: Any, read: Callable[[Any], RefUpdate | None]) -> tuple[RefUpdate, ...]:
    if not isinstance(raw, list):
        raise Malformed("push event without a list of changes")
    return tuple(u for u in (read(c) for c in raw) if u is not None)


_CLOUD_REPO = (("repository", "links", "html", "href"), ("repository", "full_name"))


def _server_repositories(body: Json) -> tuple[str, ...]:
    """The clone links, when the payload has them, and ``<project key>/<slug>`` (an HTTP clone
    URL is ``.../scm/<key>/<slug>.git``, an SSH one ``.../<key>/<slug>.git``)."""
    clones = _get(body, "repository", "links", "clone")
    links = [_text(c, "href") for c in clones] if isinstance(clones, list) else []
    key, slug = _text(body, "repository", "project", "key"), _text(body, "repository", "slug")
    # A segment with a separator in it would name another path (or look like ``host:path``).
    if key and slug and not any(c in key + slug for c in "/:"):
        links.append(f"{key}/{slug}")
    return tuple(u for u in links if u)


def parse_bitbucket(headers: Mapping[str, str], body: Json) -> Parsed:
    """Bitbucket Cloud ``repo:push`` and Data Center ``repo:refs_changed``; ``diagnostics:ping``."""
    event = header(headers, "X-Event-Key").strip()
    delivery = _first(headers, ("X-Request-UUID", "X-Request-Id"))
    if event == "diagnostics:ping":
        return Ping(event, delivery)
    if event == "repo:push":
        updates = _changes(_get(body, "push", "changes"), _cloud_change)
        return Push(event, delivery, _urls(body, *_CLOUD_REPO), updates)
    if event == "repo:refs_changed":
        updates = _changes(body.get("changes"), _server_change)
        return Push(event, delivery, _server_repositories(body), updates)
    return Ignored(event, delivery)


# generic-hmac -----------------------------------------------------------------------------


def parse_generic(headers: Mapping[str, str], body: Json) -> Parsed:
    """Any sender: a push of ``ref`` when the object names one, else of every branch."""
    delivery = header(headers, "X-Delivery-Id").strip()
    ref = _text(body, "ref")
    if not ref:
        return Push("push", delivery, (), (), every_branch=True, anonymous=True)
    push = _single_push("push", delivery, body, ())
    return Push(push.event, push.delivery, (), push.updates, anonymous=True)


_PARSERS: dict[ReceiverType, Callable[[Mapping[str, str], Json], Parsed]] = {
    "github": parse_github,
    "gitea": parse_gitea,
    "gitlab": parse_gitlab,
    "bitbucket": parse_bitbucket,
    "generic-hmac": parse_generic,
}


def parse(kind: ReceiverType, headers: Mapping[str, str], document: bytes) -> Parsed:
    """What a verified delivery of a receiver of type ``kind`` says; Malformed when unreadable."""
    return _PARSERS[kind](headers, load_object(document))
