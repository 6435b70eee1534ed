"""Attribution rules (P5): which audit events become facts, and which fact an object event joins.

The accept gate (facts: upstream-gitops-reverser.md §1.4) keeps an audit event only when it is
stage ``ResponseComplete``, a mutating verb (create, update, patch, delete, deletecollection),
answered 2xx, not a dry run (``dryRun`` in its requestURI), on no subresource but ``scale``,
and changed the resourceVersion; every refusal is named by the outcome the facts' metric uses.
An update or patch changed nothing (``unchanged_resource_version``) when its ``requestObject``
names the resourceVersion the response carries: a write that changes the object always moves
it. A no-op whose event cannot show it (a patch without a resourceVersion, a policy that does
not record ``requestObject``) is a fact the join discounts (below).

The join (§1.4 "Tiers", "Rules") of one object event to the facts known for its type:

- a DELETE joins only removal evidence: a delete fact of its uid (``delete_sticky``), else a
  deletecollection fact listing its uid (``deletecollection_body_uid``); a removal never
  settles for the last writer, and a delete fact is never overwritten by a write fact;
- a CREATE or UPDATE joins a write fact of its uid and resourceVersion (``exact``); once the
  grace has run out, the newest write fact of its uid (``latest``), else the newest write fact
  of its namespace and name that names no uid (``name``: an API whose events carry none); it
  never falls through to removal facts. A fact that names a uid is of that object only: an
  object deleted and made again under its name is another object, and no fact of the old one
  (its delete, its last writer) is ever credited to the new one (facts: upstream-0.50.md, the
  Go operator's bug of 2026-10-06). Of the write facts naming one uid
  and resourceVersion only the first (by stage time, then stream order) counts: the write that
  made the version came first, and a later one naming it changed nothing (a no-op the gate
  could not see), so a no-op never takes the credit for another user's edit;
- nothing found once the grace has run out is ``absent`` (the commit's author is the
  unresolved sentinel); before that the event waits (``None``).

The join reads a ``FactIndex``: the facts of one type indexed once by what the tiers look up
(uid and resourceVersion, uid, namespace and name, listed uid), so a branch owner builds it
once per read of a stream and each event's join is a few dictionary lookups, not a scan and
sort of every fact. It answers exactly as the scan the rules above describe: "newest" is the
latest stage time, and of facts with equal stage times the first (in stream order, or for
write facts in the stable stage-time order ``first_per_version`` keeps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from shared.model.attribution import (
    DISPLAY_NAME_CLAIM,
    EMAIL_CLAIM,
    MAX_COLLECTION_UIDS,
    AuthorFact,
    RouteJoins,
)

MUTATING_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
Tier = Literal["delete_sticky", "exact", "deletecollection_body_uid", "latest", "name", "absent"]


@dataclass(frozen=True, slots=True)
class Accepted:
    """An audit event kept as a fact."""

    fact: AuthorFact
    version: str  # objectRef.apiVersion, for the metric's labels


@dataclass(frozen=True, slots=True)
class Dropped:
    """An audit event left out, and why (the facts' audit outcome values). Its type is not
    kept: a dropped event names whatever its request named, made-up types included (N9)."""

    outcome: str
    verb: str = ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _first(extra: Mapping[str, Any], key: str) -> str:
    values = extra.get(key)
    if isinstance(values, list) and values and isinstance(values[0], str):
        return values[0]
    return ""


def _dry_run(request_uri: str) -> bool:
    try:
        query = parse_qs(urlsplit(request_uri).query)
    except ValueError:  # not a URI: read the way a dry run would be spelled in it
        return "dryRun=" in request_uri
    return any(v for v in query.get("dryRun", []))


def _collection_uids(response: Any) -> tuple[str, ...]:
    if not isinstance(response, Mapping):
        return ()
    uids: list[str] = []
    items = response.get("items")
    for item in items if isinstance(items, list) else []:
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if isinstance(meta, Mapping):
            uid = _str(meta.get("uid"))
            if uid:
                uids.append(uid)
        if len(uids) >= MAX_COLLECTION_UIDS:
            break
    return tuple(uids)


def _unchanged(event: Mapping[str, Any], after: str) -> bool:
    """The request named the resourceVersion its answer carries: nothing was written."""
    request = event.get("requestObject")
    meta = request.get("metadata") if isinstance(request, Mapping) else None
    before = _str(meta.get("resourceVersion")) if isinstance(meta, Mapping) else ""
    if not after:
        response = event.get("responseObject")
        answer = response.get("metadata") if isinstance(response, Mapping) else None
        after = _str(answer.get("resourceVersion")) if isinstance(answer, Mapping) else ""
    return bool(before) and before == after


def _identity(ref: Mapping[str, Any], response: Any) -> tuple[str, str]:
    """The uid and resourceVersion an accepted event names: ``objectRef``'s, else its answer's.

    A DELETE that removes the object at once answers a ``Status`` whose ``details.uid`` names
    it, and its event's ``objectRef`` carries no uid (facts: upstream-0.50.md, #399): without
    that uid a delete fact joins no event and every delete goes unattributed (issue 23). An answer
    that is the object itself (a delete held by finalizers, a create) names both in its
    ``metadata``."""
    uid, version = _str(ref.get("uid")), _str(ref.get("resourceVersion"))
    if not isinstance(response, Mapping):
        return uid, version
    if response.get("kind") == "Status":
        details = response.get("details")
        found = _str(details.get("uid")) if isinstance(details, Mapping) else ""
        return uid or found, version
    meta = response.get("metadata")
    if isinstance(meta, Mapping):
        uid = uid or _str(meta.get("uid"))
        version = version or _str(meta.get("resourceVersion"))
    return uid, version


def accept(event: Any) -> Accepted | Dropped:
    """The gate for one item of an EventList."""
    if not isinstance(event, Mapping):
        return Dropped("nil_event")
    ref = event.get("objectRef")
    ref = ref if isinstance(ref, Mapping) else {}
    verb, group, resource = (
        _str(event.get("verb")),
        _str(ref.get("apiGroup")),
        _str(ref.get("resource")),
    )
    if event.get("stage") != "ResponseComplete":
        return Dropped("stage", verb)
    if verb not in MUTATING_VERBS or not resource:
        return Dropped("read_only_or_unknown_verb", verb)
    status = event.get("responseStatus")
    code = status.get("code") if isinstance(status, Mapping) else None
    if not isinstance(code, int) or not 200 <= code < 300:
        return Dropped("failed_request", verb)
    if _dry_run(_str(event.get("requestURI"))):
        return Dropped("dry_run", verb)
    if _str(ref.get("subresource")) not in ("", "scale"):
        return Dropped("non_scale_subresource", verb)
    if verb in ("update", "patch") and _unchanged(event, _str(ref.get("resourceVersion"))):
        return Dropped("unchanged_resource_version", verb)
    user = event.get("user")
    user = user if isinstance(user, Mapping) else {}
    username = _str(user.get("username"))
    if not username:
        return Dropped("nil_event", verb)
    extra = user.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    response = event.get("responseObject")
    uid, resource_version = _identity(ref, response)
    fact = AuthorFact(
        author=username,
        verb=verb,
        group=group,
        resource=resource,
        namespace=_str(ref.get("namespace")),
        name=_str(ref.get("name")),
        uid=uid,
        resource_version=resource_version,
        audit_id=_str(event.get("auditID")),
        stage_timestamp=_str(event.get("stageTimestamp")),
        display_name=_first(extra, DISPLAY_NAME_CLAIM),
        email=_first(extra, EMAIL_CLAIM),
        uids=_collection_uids(response) if verb == "deletecollection" else (),
    )
    return Accepted(fact, _str(ref.get("apiVersion")))


def group_resource(group: str, resource: str) -> str:
    """``configmaps`` or ``apps/deployments`` (facts §4)."""
    return f"{group}/{resource}" if group else resource


def partition(facts: Iterable[AuthorFact]) -> dict[str, list[AuthorFact]]:
    """The facts of one request by group/resource: one stream append each (§1.4)."""
    out: dict[str, list[AuthorFact]] = {}
    for fact in facts:
        out.setdefault(group_resource(fact.group, fact.resource), []).append(fact)
    return out


@dataclass(frozen=True, slots=True)
class Joined:
    """The join's answer: the tier and the fact (None for ``absent``)."""

    tier: Tier
    fact: AuthorFact | None


def _newer(current: AuthorFact | None, fact: AuthorFact) -> AuthorFact:
    """The newer of two facts met in order: a later one wins only with a strictly later stage
    time, so of equal stage times the first met is kept."""
    if current is None or fact.stage_timestamp > current.stage_timestamp:
        return fact
    return current


def first_per_version(writes: Iterable[AuthorFact]) -> list[AuthorFact]:
    """The write facts without those naming a uid and resourceVersion an earlier fact named
    (no-ops: see the module); facts without a uid or resourceVersion are all kept."""
    kept: list[AuthorFact] = []
    seen: set[tuple[str, str]] = set()
    for fact in sorted(writes, key=lambda f: f.stage_timestamp):  # stable: stream order
        version = (fact.uid, fact.resource_version)
        if fact.uid and fact.resource_version:
            if version in seen:
                continue
            seen.add(version)
        kept.append(fact)
    return kept


@dataclass(frozen=True, slots=True)
class FactIndex:
    """The facts of one route and type, indexed by what each tier looks up (see the module)."""

    #: (uid, resourceVersion) -> the newest write fact naming it, after ``first_per_version``.
    exact: Mapping[tuple[str, str], AuthorFact]
    #: uid -> the newest write fact of it (``first_per_version``'s writes).
    latest: Mapping[str, AuthorFact]
    #: (namespace, name) -> the newest write fact of it that names no uid (the same writes).
    by_name: Mapping[tuple[str, str], AuthorFact]
    #: uid -> the newest delete fact of it.
    deleted: Mapping[str, AuthorFact]
    #: uid -> the newest deletecollection fact listing it.
    listed: Mapping[str, AuthorFact]
    #: uid -> its create facts by stage time (equal times in stream order).
    creates: Mapping[str, tuple[AuthorFact, ...]]

    @classmethod
    def of(cls, facts: Iterable[AuthorFact]) -> FactIndex:
        """Index ``facts`` (in stream order)."""
        known = list(facts)
        exact: dict[tuple[str, str], AuthorFact] = {}
        latest: dict[str, AuthorFact] = {}
        by_name: dict[tuple[str, str], AuthorFact] = {}
        for f in first_per_version(f for f in known if not f.removal):
            version = (f.uid, f.resource_version)
            exact[version] = _newer(exact.get(version), f)
            latest[f.uid] = _newer(latest.get(f.uid), f)
            if not f.uid:  # a fact naming a uid is of that object only, never of a namesake
                where = (f.namespace, f.name)
                by_name[where] = _newer(by_name.get(where), f)
        deleted: dict[str, AuthorFact] = {}
        listed: dict[str, AuthorFact] = {}
        creates: dict[str, list[AuthorFact]] = {}
        for f in known:
            if f.verb == "delete":
                if f.uid:  # a delete fact answers only the DELETE of its uid
                    deleted[f.uid] = _newer(deleted.get(f.uid), f)
            elif f.verb == "deletecollection":
                for uid in f.uids:
                    listed[uid] = _newer(listed.get(uid), f)
            elif f.verb == "create":
                creates.setdefault(f.uid, []).append(f)
        return cls(
            exact,
            latest,
            by_name,
            deleted,
            listed,
            {uid: tuple(sorted(c, key=lambda f: f.stage_timestamp)) for uid, c in creates.items()},
        )


def _indexed(facts: Iterable[AuthorFact] | FactIndex) -> FactIndex:
    return facts if isinstance(facts, FactIndex) else FactIndex.of(facts)


def join(
    operation: str,
    *,
    uid: str,
    resource_version: str,
    namespace: str,
    name: str,
    facts: Iterable[AuthorFact] | FactIndex,
    grace_over: bool,
) -> Joined | None:
    """The fact an object event joins, or None while it may still arrive (see the module);
    ``facts`` indexed already (``FactIndex.of``) or not."""
    index = _indexed(facts)
    if operation == "DELETE":
        deleted = index.deleted.get(uid) if uid else None
        if deleted is not None:
            return Joined("delete_sticky", deleted)
        listed = index.listed.get(uid)
        if listed is not None:
            return Joined("deletecollection_body_uid", listed)
        return Joined("absent", None) if grace_over else None
    exact = index.exact.get((uid, resource_version)) if uid else None
    if exact is not None:
        return Joined("exact", exact)
    if not grace_over:
        return None
    latest = index.latest.get(uid) if uid else None
    if latest is not None:
        return Joined("latest", latest)
    by_name = index.by_name.get((namespace, name)) if name else None
    if by_name is not None:
        return Joined("name", by_name)
    return Joined("absent", None)


def join_submitter(
    *,
    uid: str,
    resource_version: str,
    facts: Iterable[AuthorFact] | FactIndex,
    grace_over: bool,
) -> Joined | None:
    """P5, P6: the fact naming who submitted a CommitRequest: the create of its uid (one object
    has one create). ``exact`` when it names the resourceVersion the watcher published,
    ``latest`` when the request had changed before the watcher saw it (its create still names
    the submitter); only a create counts, so a later edit of the request (a label, say) never
    takes the credit. Nothing found: None before the grace ran out (the request waits), then
    ``absent`` (it binds as a request whose submitter is not known)."""
    creates = _indexed(facts).creates.get(uid, ()) if uid else ()
    if creates:
        exact = next((f for f in creates if f.resource_version == resource_version), None)
        return Joined("exact", exact) if exact is not None else Joined("latest", creates[0])
    return Joined("absent", None) if grace_over else None


#: ``AuditFactsReceived`` (N5): the reasons, by how the route's edits last fared in the join.
FACTS_JOINED = "FactsJoined"
NO_AUDIT_FACTS = "NoAuditFacts"
NO_EDITS_JUDGED = "NoEditsJudged"


def facts_received(route: str, joins: RouteJoins | None) -> tuple[str, str, str]:
    """The ``AuditFactsReceived`` condition (status, reason, message) of a ClusterProvider
    whose audit route is ``route``: True while the last edit a branch owner judged on it found
    its audit fact, False (``NoAuditFacts``) when none came within the grace, Unknown before
    any edit was judged. Facts that stop arriving (the receiver down, the API server's webhook
    pointed elsewhere, batches dropped) show here, not only as commits by the sentinel."""
    path = f"/audit-webhook/{route}"
    if joins is None:
        return "Unknown", NO_EDITS_JUDGED, f"no edit read through {path} has been judged yet"
    if joins.verdict == "joined":
        return "True", FACTS_JOINED, f"edits find their audit facts at {path} (since {joins.since})"
    return (
        "False",
        NO_AUDIT_FACTS,
        (
            f"since {joins.since} edits find no audit fact at {path} within the grace, and their "
            "commits are authored by the unresolved sentinel: check that the API server's audit "
            "webhook posts to this route with its token and that its policy records the edits"
        ),
    )
