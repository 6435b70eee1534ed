"""Identifiers: branches, appliers, tokens, and how a repository URL is normalised.

Several GitProviders that point at the same repository share one branch (behaviour.md §0), so
the branch key is built from a normalised URL: scheme and host lower-cased, ``.git`` and a
trailing ``/`` dropped, credentials removed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import NewType
from urllib.parse import urlsplit, urlunsplit

BranchKey = NewType("BranchKey", str)
ApplierKey = NewType("ApplierKey", str)
RequestToken = NewType("RequestToken", str)
GitTargetUid = NewType("GitTargetUid", str)


def normalise_url(url: str) -> str:
    """The repository URL as branches are keyed: no credentials, no ``.git``, no trailing /."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if parts.port:
        host = f"{host}:{parts.port}"
    path = parts.path.rstrip("/")
    path = path.removesuffix(".git").rstrip("/")
    return urlunsplit((parts.scheme.lower(), host, path, "", ""))


def repository_key(url: str) -> str:
    """A short, stable, Redis-safe key for a repository (its normalised URL), whatever the
    GitProvider that names it."""
    return hashlib.sha256(normalise_url(url).encode()).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Branch:
    """A repository and a branch name: the unit that owns quietness."""

    url: str
    name: str

    @property
    def key(self) -> BranchKey:
        """A short, stable, Redis-safe key for this branch."""
        digest = hashlib.sha256(f"{normalise_url(self.url)}\0{self.name}".encode()).hexdigest()
        return BranchKey(digest[:24])


@dataclass(frozen=True, slots=True)
class ObjectId:
    """Who an API object is, independent of where its file lives (M4)."""

    group: str
    version: str
    resource: str
    kind: str
    namespace: str
    name: str

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def same_object(self, other: ObjectId) -> bool:
        """Identity ignores the version: objects that differ only in version are one object."""
        return (self.group, self.kind, self.namespace, self.name) == (
            other.group,
            other.kind,
            other.namespace,
            other.name,
        )
