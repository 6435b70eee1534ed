"""What a verified delivery says: a push (which refs, which repository), a ping, or neither.

Pure functions, one per ``spec.receiver.type`` (its ``read`` in ``services.receiver.hosts``,
given the event and delivery id the host's headers name), over the verified JSON. The
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
deliveries name none by design (``Push.anonymous``). The records and careful field readers
are ``services.receiver.payloads``; this module picks the host from the Git-host table.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.receiver.hosts import host_of
from services.receiver.payloads import (
    ZERO_SHA,
    Ignored,
    Json,
    Malformed,
    Parsed,
    Ping,
    Push,
    RefUpdate,
    load_object,
)
from services.receiver.signatures import first_header
from shared.model.receivers import ReceiverType

__all__ = [
    "ZERO_SHA",
    "Ignored",
    "Json",
    "Malformed",
    "Parsed",
    "Ping",
    "Push",
    "RefUpdate",
    "load_object",
    "parse",
]


def parse(kind: ReceiverType, headers: Mapping[str, str], document: bytes) -> Parsed:
    """What a verified delivery of a receiver of type ``kind`` says; Malformed when unreadable."""
    host = host_of(kind)
    body = load_object(document)
    event = first_header(headers, host.event_headers)
    return host.read(event, first_header(headers, host.delivery_headers), body)
