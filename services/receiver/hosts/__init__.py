"""THE Git-host table: one record per ``spec.receiver.type``, the one place a host is added.

A host is a module here (its ``verify``, R2, and its ``read`` of a verified payload, R4) and
one ``GitHost`` entry in ``HOSTS`` naming the headers that carry its event and delivery id;
``services.receiver.verify.verify`` and ``services.receiver.deliveries.parse`` dispatch through
the table and nothing else keys anything by host. ``ReceiverType`` (``shared.model.receivers``)
and the GitProvider CRD's enum list the same hosts, and ``tests/unit/receiver/test_hosts.py``
fails when a host is missing from any of them. Like their modules, the records do no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from services.receiver.hosts import azure_devops, bitbucket, generic_hmac, gitea, github, gitlab
from services.receiver.payloads import Json, Parsed
from services.receiver.signatures import Verifier
from shared.model.receivers import ReceiverType

#: A host's reading of a verified payload: (event, delivery id, JSON object) -> what it says.
Reader = Callable[[str, str, Json], Parsed]


@dataclass(frozen=True, slots=True)
class GitHost:
    """Everything the receiver knows of one Git host's webhooks."""

    type: ReceiverType
    #: R2: is the delivery from the host? (headers, raw body, content type, secret).
    verify: Verifier
    #: R4: what a verified delivery says, given its event and delivery id.
    read: Reader
    #: The headers naming the event, first non-empty wins (none: the sender names no event).
    event_headers: tuple[str, ...]
    #: The headers naming the delivery id, first non-empty wins.
    delivery_headers: tuple[str, ...]


_GITEA_VENDORS = ("Forgejo", "Gitea", "Gogs", "GitHub")

HOSTS: Mapping[ReceiverType, GitHost] = MappingProxyType(
    {
        "github": GitHost(
            "github",
            github.verify,
            github.read,
            event_headers=("X-GitHub-Event",),
            delivery_headers=("X-GitHub-Delivery",),
        ),
        "gitea": GitHost(
            "gitea",
            gitea.verify,
            gitea.read,
            event_headers=tuple(f"X-{v}-Event" for v in _GITEA_VENDORS),
            delivery_headers=tuple(f"X-{v}-Delivery" for v in _GITEA_VENDORS),
        ),
        "gitlab": GitHost(
            "gitlab",
            gitlab.verify,
            gitlab.read,
            event_headers=("X-Gitlab-Event",),
            delivery_headers=("Idempotency-Key", "X-Gitlab-Event-UUID"),
        ),
        "bitbucket": GitHost(
            "bitbucket",
            bitbucket.verify,
            bitbucket.read,
            event_headers=("X-Event-Key",),
            delivery_headers=("X-Request-UUID", "X-Request-Id"),
        ),
        "azure-devops": GitHost(
            "azure-devops",
            azure_devops.verify,
            azure_devops.read,
            # The event is in the body (eventType), and so is the delivery id a retry repeats
            # (id); this header tells its requests apart (what Argo CD recognises them by).
            event_headers=(),
            delivery_headers=("X-Vss-ActivityId",),
        ),
        "generic-hmac": GitHost(
            "generic-hmac",
            generic_hmac.verify,
            generic_hmac.read,
            event_headers=(),
            delivery_headers=("X-Delivery-Id",),
        ),
    }
)


def host_of(kind: ReceiverType) -> GitHost:
    """The table's record of a ``spec.receiver.type``."""
    return HOSTS[kind]
