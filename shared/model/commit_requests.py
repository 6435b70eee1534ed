"""CommitRequest records: the view the watcher reads, the stream item a branch worker
receives, and the outcome it records (P6).

A CommitRequest travels to its branch's owner as one entry of the branch's events stream
(``op`` = ``COMMIT``), so it is read, claimed by a new owner and acknowledged exactly like
the object events it belongs with (M8): acknowledged only after the push that holds its
window, or at once when it binds to nothing. The outcome is recorded in Redis under the
request's uid (``shared.store.commit_requests``); the watcher projects it onto the object's
status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from shared.model.crds import Condition, Meta, parse_conditions, parse_meta
from shared.model.defaults import CLOSE_DELAY_S
from shared.model.events import GitTargetRef
from shared.model.ids import GitTargetUid

#: The ``op`` field of a CommitRequest entry in a branch's events stream.
COMMIT = "COMMIT"

#: The author of a window or request whose Kubernetes user is not known (attribution off, or
#: not resolved): a request with it binds to the open window whoever's it is.
UNATTRIBUTED = "unattributed"

#: How a request's submitter was found (P5, P6): "" attribution is off for its GitTarget,
#: ``RESOLVED`` from the audit fact of the request's create, ``UNRESOLVED`` no such fact
#: arrived within the grace (it then binds as an unattributed request does).
RESOLVED, UNRESOLVED = "resolved", "unresolved"

#: CRD bounds (the schema enforces them; the parser clamps what an older API let through).
MAX_CLOSE_DELAY_S = 300
MAX_MESSAGE = 1024


@dataclass(frozen=True, slots=True)
class CommitRequestView:
    """A CommitRequest as the watcher reads it."""

    meta: Meta
    target: str  # spec.targetRef.name, a GitTarget of meta.namespace
    message: str  # "" when left out: the template's message is used
    close_delay_s: int
    conditions: tuple[Condition, ...] = ()
    branch: str = ""
    sha: str = ""


def parse_commit_request(raw: Mapping[str, Any]) -> CommitRequestView:
    """A CommitRequest."""
    spec = _map(raw.get("spec"))
    status = _map(raw.get("status"))
    try:
        delay = int(spec.get("closeDelaySeconds", CLOSE_DELAY_S))
    except (TypeError, ValueError):
        delay = 0
    return CommitRequestView(
        meta=parse_meta(raw),
        target=str(_map(spec.get("targetRef")).get("name", "")),
        message=str(spec.get("message") or "")[:MAX_MESSAGE],
        close_delay_s=min(max(delay, 0), MAX_CLOSE_DELAY_S),
        conditions=parse_conditions(raw),
        branch=str(status.get("branch") or ""),
        sha=str(status.get("sha") or ""),
    )


def _map(value: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True, slots=True)
class CommitRequestItem:
    """What a branch worker needs of one CommitRequest (one stream entry)."""

    target: GitTargetRef
    uid: str  # the CommitRequest's metadata.uid: the key of its outcome (idempotence)
    namespace: str
    name: str
    message: str
    close_delay_s: int
    #: The submitter's Kubernetes user name, set by the branch's owner from the audit fact of
    #: the request's create (``UNATTRIBUTED`` until then, or when none is found).
    author: str = UNATTRIBUTED
    #: metadata.resourceVersion as the watcher saw the request when it published it (P5: the
    #: join to the create's audit fact prefers this version).
    resource_version: str = ""
    #: How ``author`` was found (``RESOLVED``, ``UNRESOLVED``, "" off); the owner's, not sent.
    attribution: str = ""

    def to_fields(self) -> dict[str, str]:
        """Flat string fields for a Redis stream entry."""
        return {
            "target": json.dumps([self.target.uid, self.target.namespace, self.target.name]),
            "op": COMMIT,
            "uid": self.uid,
            "id": json.dumps([self.namespace, self.name]),
            "message": self.message,
            "delay": str(self.close_delay_s),
            "author": self.author,
            "rv": self.resource_version,
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> CommitRequestItem:
        """The inverse of ``to_fields``; raises ValueError on a malformed entry."""
        try:
            if fields["op"] != COMMIT:
                raise ValueError(f"not a commit request: {fields['op']!r}")
            uid, namespace, name = json.loads(fields["target"])
            ns, cr_name = json.loads(fields["id"])
            return cls(
                target=GitTargetRef(GitTargetUid(uid), namespace, name),
                uid=fields["uid"],
                namespace=str(ns),
                name=str(cr_name),
                message=fields.get("message", ""),
                close_delay_s=int(fields["delay"]),
                author=fields.get("author") or UNATTRIBUTED,
                resource_version=fields.get("rv", ""),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"malformed commit request: {err}") from err

    @property
    def coalesce_key(self) -> str:
        """Each request is its own entry: nothing replaces it (U1 coalesces objects only)."""
        return json.dumps([self.target.uid, COMMIT, self.uid])


#: Outcome reasons (the Go operator's, facts §2.6). The ``BENIGN`` ones are Ready=True.
COMMITTED = "Committed"
NO_WINDOW = "NoWindowInGrace"
WINDOW_MISMATCH = "WindowMismatch"
ALREADY_PRESENT = "AlreadyPresent"
FINALIZE_FAILED = "FinalizeFailed"
WAITING = "WaitingForCloseDelay"
BENIGN = frozenset({COMMITTED, NO_WINDOW, WINDOW_MISMATCH, ALREADY_PRESENT})
FINAL = BENIGN | {FINALIZE_FAILED}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the branch worker did with a request: ``WAITING`` while its window is held open
    until ``deadline``, then one of ``FINAL``; ``sha`` is the commit on the remote that holds
    the window (or the tip that already held it, for ``AlreadyPresent``)."""

    reason: str
    message: str = ""
    branch: str = ""
    sha: str = ""
    at: float = 0.0
    deadline: float = 0.0
    #: P5: how the request's submitter was found (``RESOLVED``, ``UNRESOLVED``, "" off) and
    #: who it is (the Kubernetes user name, "" unless resolved).
    attribution: str = ""
    submitter: str = ""

    @property
    def final(self) -> bool:
        """True once nothing more will happen to the request."""
        return self.reason in FINAL

    def to_fields(self) -> dict[str, str]:
        """Flat string fields for a Redis hash."""
        return {
            "reason": self.reason,
            "message": self.message,
            "branch": self.branch,
            "sha": self.sha,
            "at": repr(self.at),
            "deadline": repr(self.deadline),
            "attribution": self.attribution,
            "submitter": self.submitter,
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> Outcome | None:
        """The inverse of ``to_fields``; None when the hash holds no outcome (yet)."""
        reason = fields.get("reason")
        if not reason:
            return None
        try:
            return cls(
                reason=reason,
                message=fields.get("message", ""),
                branch=fields.get("branch", ""),
                sha=fields.get("sha", ""),
                at=float(fields.get("at") or 0),
                deadline=float(fields.get("deadline") or 0),
                attribution=fields.get("attribution", ""),
                submitter=fields.get("submitter", ""),
            )
        except ValueError:
            return None
