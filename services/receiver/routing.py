"""Which branches a verified push is a hint for: pure, from the receiver record and the push.

A push becomes one notice per branch it names that a GitTarget of this GitProvider uses (R4);
a ref no GitTarget uses (another branch, a tag) is answered 202 and dropped. A push whose
payload names a repository other than the GitProvider's (an organisation-wide hook, a secret
shared between repositories) is dropped too, and so is a host's push that names none
(outside check 8: it could be about any repository; only generic-hmac deliveries, which never
name one, are tied to the GitProvider by its secret alone). Repositories are compared by the
tail of their path (``owner/repo``, ``group/sub/repo``, or a Bitbucket Data Center
``<key>/<slug>`` against
``.../scm/<key>/<slug>.git``, or Azure DevOps's ``<org>/<project>/_git/<repo>`` against its SSH
``v3/<org>/<project>/<repo>``: the ``_git`` segment is not compared), case-insensitively,
ignoring the scheme, host, port and ``.git``:
hosts name themselves in payloads by their public URL, which is often not the one the
GitProvider clones from (an in-cluster Service, SSH instead of HTTPS).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from services.receiver.deliveries import Push
from shared.model.notices import HEADS, PushNotice
from shared.model.receivers import ReceiverRecord


@dataclass(frozen=True, slots=True)
class Routed:
    """The notices to store for a push, or why there are none."""

    notices: tuple[PushNotice, ...]
    reason: str


#: Azure DevOps's HTTPS URLs hold it (``/<org>/<project>/_git/<repo>``), its SSH URLs do not.
AZURE_GIT_SEGMENT = "_git"
#: Azure DevOps Services' SSH URLs start their path with the protocol version (``v3/``).
AZURE_SSH_VERSION = "v3"
AZURE_SSH_HOSTS = ("ssh.dev.azure.com", "vs-ssh.visualstudio.com")
#: URLs whose path segments are remembered: a receiver sees the same few URLs (its GitProviders'
#: and the ones their hosts name themselves by) on every delivery.
_PATHS_KEPT = 1024


@lru_cache(maxsize=_PATHS_KEPT)
def repository_path(url: str) -> tuple[str, ...]:
    """The lower-cased path segments of a repository URL (scp-style ``git@host:o/r`` too)."""
    text = url.strip()
    first = text.split("/", 1)[0]
    scp = "://" not in text and ":" in first
    host = first.split(":", 1)[0].rpartition("@")[2] if scp else urlsplit(text).hostname or ""
    path = text.split(":", 1)[1] if scp else urlsplit(text).path
    segments = [s for s in path.lower().split("/") if s and s != AZURE_GIT_SEGMENT]
    if segments and segments[0] == AZURE_SSH_VERSION and host.lower().endswith(AZURE_SSH_HOSTS):
        segments = segments[1:]
    if segments:
        segments[-1] = segments[-1].removesuffix(".git")
    return tuple(s for s in segments if s)


@lru_cache(maxsize=_PATHS_KEPT)
def same_repository(a: str, b: str) -> bool:
    """True when one URL's path ends with the other's (and neither is empty)."""
    short, long = sorted((repository_path(a), repository_path(b)), key=len)
    return bool(short) and long[len(long) - len(short) :] == short


def other_repository(record: ReceiverRecord, push: Push) -> str | None:
    """Why the push is not believed to be about the GitProvider's repository, or None."""
    if push.anonymous:
        return None
    if not push.repositories:
        return "the delivery names no repository"
    if not any(same_repository(u, record.url) for u in push.repositories):
        return "the delivery is about another repository"
    return None


def route(record: ReceiverRecord, push: Push, received_at: float) -> Routed:
    """The notices a push means for this receiver's branches."""
    mismatch = other_repository(record, push)
    if mismatch is not None:
        return Routed((), mismatch)
    wanted = set(record.branches)
    if push.every_branch:
        moved = {name: "" for name in sorted(wanted)}
    else:
        moved = {
            u.ref.removeprefix(HEADS): u.after
            for u in push.updates
            if u.ref.startswith(HEADS) and u.ref.removeprefix(HEADS) in wanted
        }
    if not moved:
        refs = ", ".join(sorted({u.ref[:200] for u in push.updates})[:3]) or "no ref"
        return Routed((), f"no GitTarget of this GitProvider uses {refs}")
    notices = tuple(
        PushNotice(
            provider=record.provider,
            url=record.url,
            ref=HEADS + name,
            after=after,
            delivery=push.delivery,
            received_at=received_at,
        )
        for name, after in sorted(moved.items())
    )
    return Routed(notices, f"stored {len(notices)} notice(s)")
