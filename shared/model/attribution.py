"""Attribution records (P5): who made an API edit (an audit fact) and who authors its commit.

An ``AuthorFact`` is what the audit receiver keeps of one accepted audit event (facts:
upstream-gitops-reverser.md §1.4, "Fact fields"); it travels to the branch workers as JSON in
a Redis stream entry (``shared.store.attribution``). An ``Author`` is a commit's author as the
facts' §3.6 builds it from the resolved user: the display-name and email claims of
``user.extra`` when safe, else the user name and a constructed safe email; the sentinel when
attribution ran and did not resolve. The outcome is carried explicitly (§3.6), never inferred
from the author's text.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

#: ``user.extra`` keys of the OIDC claims (facts §3.6).
DISPLAY_NAME_CLAIM = "configbutler.ai/claims/display-name"
EMAIL_CLAIM = "configbutler.ai/claims/email"
#: The author of a commit whose attribution ran and found nobody (facts §3.6).
UNRESOLVED_NAME = "unknown (attribution unresolved)"
UNRESOLVED_EMAIL = "attribution-unresolved@gitops-reverser.invalid"
UNRESOLVED_TOKEN = "attribution-unresolved"
SAFE_EMAIL_DOMAIN = "noreply.cluster.local"
#: Most uids a deletecollection fact carries (facts §1.4).
MAX_COLLECTION_UIDS = 10_000

Outcome = Literal["", "resolved", "unresolved"]  # "": not attempted (attribution off)

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_UNSAFE_NAME = re.compile(r"[<>\x00-\x1f\x7f]")
_NOT_EMAIL_LOCAL = re.compile(r"[^a-z0-9.-]")


@dataclass(frozen=True, slots=True)
class AuthorFact:
    """One accepted audit event: who did which mutating verb to which object."""

    author: str  # user.username
    verb: str
    group: str
    resource: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    audit_id: str
    stage_timestamp: str
    display_name: str = ""
    email: str = ""
    #: deletecollection: the uids its response listed (at most ``MAX_COLLECTION_UIDS``).
    uids: tuple[str, ...] = ()

    @property
    def removal(self) -> bool:
        """A delete or deletecollection fact."""
        return self.verb in ("delete", "deletecollection")

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        data = asdict(self)
        data["uids"] = list(self.uids)
        return data

    @classmethod
    def from_data(cls, data: Any) -> AuthorFact:
        """The inverse of ``to_data``; ValueError when it is not a fact."""
        if not isinstance(data, dict) or not isinstance(data.get("author"), str):
            raise ValueError("not an author fact")
        try:
            fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
            fields["uids"] = tuple(str(u) for u in data.get("uids") or ())
            return cls(**fields)
        except TypeError as err:
            raise ValueError(f"not an author fact: {err}") from err


def facts_json(facts: list[AuthorFact]) -> str:
    """One stream entry's ``facts`` field."""
    return json.dumps([f.to_data() for f in facts], sort_keys=True, separators=(",", ":"))


def facts_from_json(text: str) -> list[AuthorFact]:
    """The inverse of ``facts_json``; ValueError on anything else."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"undecodable facts: {err}") from err
    if not isinstance(items, list):
        raise ValueError("facts are not a list")
    return [AuthorFact.from_data(item) for item in items]


@dataclass(frozen=True, slots=True)
class Author:
    """A commit's author, with how it was found and the user name it stands for."""

    name: str
    email: str
    outcome: Outcome
    username: str = ""  # the Kubernetes user ("" unless resolved)

    def to_data(self) -> dict[str, str]:
        """JSON-ready."""
        return {
            "name": self.name,
            "email": self.email,
            "outcome": self.outcome,
            "username": self.username,
        }

    @classmethod
    def from_data(cls, data: Any) -> Author | None:
        """The inverse of ``to_data``; None for anything else."""
        if not isinstance(data, dict):
            return None
        outcome = data.get("outcome")
        if outcome not in ("resolved", "unresolved"):
            return None
        return cls(
            str(data.get("name", "")),
            str(data.get("email", "")),
            outcome,
            str(data.get("username", "")),
        )


UNRESOLVED = Author(UNRESOLVED_NAME, UNRESOLVED_EMAIL, "unresolved")


def safe_display_name(value: str) -> bool:
    """A display name usable in an author header: no ``<``, ``>`` or control characters."""
    return bool(value.strip()) and not _UNSAFE_NAME.search(value)


def safe_email(value: str) -> bool:
    """An email claim that looks like an address (and nothing more)."""
    return bool(_EMAIL.fullmatch(value))


def construct_safe_email(username: str) -> str:
    """Lower-case, keep ``[a-z0-9.-]``, append ``@noreply.cluster.local`` (facts §3.6)."""
    local = _NOT_EMAIL_LOCAL.sub("", username.lower()) or "unknown"
    return f"{local}@{SAFE_EMAIL_DOMAIN}"


def author_of(fact: AuthorFact) -> Author:
    """The author a resolved fact names (facts §3.6)."""
    name = fact.display_name if safe_display_name(fact.display_name) else fact.author
    if not safe_display_name(name):
        name = construct_safe_email(fact.author).split("@", 1)[0]
    email = fact.email if safe_email(fact.email) else construct_safe_email(fact.author)
    return Author(name, email, "resolved", fact.author)


JoinVerdict = Literal["joined", "absent"]


@dataclass(frozen=True, slots=True)
class RouteJoins:
    """How the edits of one audit route last fared in the join (N5): ``joined`` (the last edit
    a branch owner judged found its fact) or ``absent`` (none came within the grace), and
    since when (UTC, ISO 8601). Owners write it when their verdict on the route changes, so
    the watcher can show facts that stop arriving on the ClusterProvider."""

    verdict: JoinVerdict
    since: str
