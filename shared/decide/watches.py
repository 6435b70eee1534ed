"""The watches the watcher should run, and whether each WatchRule is Ready (M1).

A watch is one (GitTarget incarnation, group/resource, namespace): the WatchRules that name a
served GitTarget in their own namespace select resource types through the GitTarget's
ClusterProvider, and rules that select the same type merge (their operations add up). The
namespace watched is the WatchRule's own, by name, in the ClusterProvider's cluster. The
watcher diffs this set against the watches it runs; it never decides anything itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from shared.decide.conditions import Problem
from shared.decide.resolution import resolve_rule, resolve_rules
from shared.model.config import PruneMode
from shared.model.crd_meta import LabelSelector
from shared.model.crds import ClusterWatchRuleView, GitTargetView, RuleView, WatchRuleView
from shared.model.events import GitTargetRef, Operation
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.resources import ApiResource, Catalog, sensitive_kind
from shared.model.rule_fields import IgnoreDifferences

GIT_TARGET_NOT_FOUND = "GitTargetNotFound"
UNRESOLVED_RESOURCES = "UnresolvedResources"
CLUSTER_UNAVAILABLE = "ClusterUnavailable"
#: The rule selects objects its GitTarget never writes to Git (M10, P3): the branch worker
#: refuses each of them, so the rule, not the GitTarget, is where the fix goes.
SENSITIVE_RESOURCE = "SensitiveResource"
#: A rule whose objectSelector or ignoreDifferences cannot be used (the CRD's CEL rules again).
INVALID_RULE = "InvalidRule"


@dataclass(frozen=True, slots=True, order=True)
class WatchKey:
    """Who a watch serves and what it watches; its cursor is keyed by this."""

    uid: GitTargetUid
    group: str
    resource: str
    namespace: str

    @property
    def group_resource(self) -> str:
        """``group/resource`` (``/configmaps`` for the core group)."""
        return f"{self.group}/{self.resource}"


@dataclass(frozen=True, slots=True)
class WatchSpec:
    """Everything one watch needs; a changed spec restarts the watch (from its cursor)."""

    key: WatchKey
    resource: ApiResource
    cluster: str  # the ClusterProvider to read through
    target: GitTargetRef
    branch: BranchKey
    operations: frozenset[Operation]
    prune: PruneMode
    sensitive: bool = False  # M10: only the object's identity is published, and it is refused
    #: P3: core Secrets of a GitTarget with spec.encryption are published sealed for these
    #: age recipients instead (empty: refused as above).
    recipients: tuple[str, ...] = ()
    #: D2: a WatchRule asking for this watch was Ready before this watcher started, so the watch
    #: ran before; finding no cursor in Redis then means Redis lost it. Not part of equality: it
    #: never restarts a running watch.
    mirrored_before: bool = field(default=False, compare=False)
    #: rules[].objectSelector of the rules merged into this watch: an object is mirrored when
    #: one of them matches its labels; None when a rule selects every object of the type.
    selectors: tuple[LabelSelector, ...] | None = None
    #: rules[].ignoreDifferences of those rules, merged: fields whose value in Git is kept.
    ignore: IgnoreDifferences = field(default_factory=IgnoreDifferences)
    #: P8: the GitTarget's standing reconcile request ("" none); a watch that has not handled
    #: this value lists again and publishes every object and the names it found, whatever it
    #: published before. A new value restarts the watch.
    resync: str = ""


@dataclass(frozen=True, slots=True)
class ServedTarget:
    """A GitTarget that passed validation, and the branch its events go to."""

    target: GitTargetView
    branch: BranchKey


def watch_spec(
    served: ServedTarget,
    resource: ApiResource,
    ops: frozenset[Operation],
    namespace: str | None = None,
) -> WatchSpec:
    """The watch of one resource type for one served GitTarget, in the GitTarget's namespace
    (a WatchRule's) or in ``namespace`` ("" for a ClusterWatchRule's cluster-wide watch)."""
    target = served.target
    where = target.meta.namespace if namespace is None else namespace
    key = WatchKey(target.uid, resource.group, resource.resource, where)
    ref = GitTargetRef(target.uid, target.meta.namespace, target.meta.name)
    sensitive = (resource.group == "" and resource.resource == "secrets") or sensitive_kind(
        resource.group, resource.kind, target.sensitive
    )
    enc = target.encryption
    recipients: tuple[str, ...] = ()
    if enc is not None and not enc.problem and (resource.group, resource.kind) == ("", "Secret"):
        recipients = enc.recipients  # only a Secret's payload is what sops encrypts (data)
    return WatchSpec(
        key,
        resource,
        target.cluster_provider,
        ref,
        served.branch,
        ops,
        target.prune,
        sensitive,
        recipients,
        resync=target.controls.resync,
    )


def rule_watch(
    served: ServedTarget,
    resource: ApiResource,
    entry: RuleView,
    before: bool,
    namespace: str | None = None,
) -> WatchSpec:
    """The watch one rule entry asks for (``watch_spec`` with its selector and ignores)."""
    spec = watch_spec(served, resource, entry.operations, namespace)
    selector = entry.fields.selector
    return replace(
        spec,
        mirrored_before=before,
        selectors=None if selector is None else (selector,),
        ignore=entry.fields.ignore,
    )


def merged(known: WatchSpec | None, spec: WatchSpec) -> WatchSpec:
    """Two rules that select one type make one watch: their operations add up, an object any
    of them selects is mirrored (one without a selector selects all), and what either ignores
    is ignored."""
    if known is None:
        return spec
    selectors = None
    if known.selectors is not None and spec.selectors is not None:
        selectors = tuple(dict.fromkeys(known.selectors + spec.selectors))
    return replace(
        known,
        operations=known.operations | spec.operations,
        mirrored_before=known.mirrored_before or spec.mirrored_before,
        selectors=selectors,
        ignore=known.ignore.merged(spec.ignore),
    )


def invalid_rule(rules: Iterable[RuleView]) -> Problem | None:
    """The first rule entry whose selector or ignoreDifferences cannot be used."""
    for index, entry in enumerate(rules):
        if entry.fields.problem:
            return Problem(INVALID_RULE, f"rules[{index}].{entry.fields.problem}")
    return None


def ready_before(rule: WatchRuleView | ClusterWatchRuleView, started: str) -> bool:
    """D2: the rule's ``Ready`` condition turned True in a second before ``started`` (RFC 3339,
    this watcher's start): its watches ran before this process, so a missing cursor was lost."""
    return any(
        c.type == "Ready" and c.status == "True" and c.last_transition_time < started
        for c in rule.conditions
        if c.last_transition_time
    )


def desired_watches(
    targets: Iterable[ServedTarget],
    rules: Iterable[WatchRuleView],
    catalogs: Mapping[str, Catalog],
    started: str = "",
) -> dict[WatchKey, WatchSpec]:
    """Every watch the served GitTargets' WatchRules ask for (no catalog: no watches yet);
    ``started`` is the watcher's start (``ready_before``)."""
    by_name = {(s.target.meta.namespace, s.target.meta.name): s for s in targets}
    wanted: dict[WatchKey, WatchSpec] = {}
    for rule in rules:
        served = by_name.get((rule.meta.namespace, rule.target))
        catalog = catalogs.get(served.target.cluster_provider) if served else None
        if served is None or catalog is None or invalid_rule(rule.rules) is not None:
            continue
        before = ready_before(rule, started)
        for entry in rule.rules:
            for resource in resolve_rule(entry, catalog).resources:
                spec = rule_watch(served, resource, entry, before)
                wanted[spec.key] = merged(wanted.get(spec.key), spec)
    return wanted


def rule_problems(
    rule: WatchRuleView,
    target: GitTargetView | None,
    cluster_problem: Problem | None,
    catalog: Catalog | None,
) -> list[Problem]:
    """Why a WatchRule is not Ready: no target, no usable cluster, or names that do not resolve."""
    ns = rule.meta.namespace
    invalid = invalid_rule(rule.rules)
    if invalid is not None:
        return [invalid]
    if target is None:
        return [Problem(GIT_TARGET_NOT_FOUND, f"GitTarget {ns}/{rule.target} not found")]
    if cluster_problem is not None:
        return [cluster_problem]
    if catalog is None:
        message = f"the API of ClusterProvider {target.cluster_provider} cannot be read yet"
        return [Problem(CLUSTER_UNAVAILABLE, message, permanent=False)]
    resolution = resolve_rules(rule.rules, catalog)
    if resolution.unresolved:
        names = ", ".join(resolution.unresolved)
        return [Problem(UNRESOLVED_RESOURCES, f"no namespaced, watchable resource: {names}")]
    refused = [r for r in resolution.resources if refused_type(target, r)]
    if refused:
        return [Problem(SENSITIVE_RESOURCE, sensitive_message(target, refused))]
    return []


def refused_type(target: GitTargetView, resource: ApiResource) -> bool:
    """Whether every object of this type that the GitTarget is sent is refused (M10): it is
    sensitive, and only a core Secret of a GitTarget with spec.encryption is sealed (P3)."""
    sensitive = (resource.group == "" and resource.resource == "secrets") or sensitive_kind(
        resource.group, resource.kind, target.sensitive
    )
    sealable = (resource.group, resource.kind) == ("", "Secret") and target.encryption is not None
    return sensitive and not sealable


def sensitive_message(target: GitTargetView, refused: Iterable[ApiResource]) -> str:
    """What a WatchRule selecting types its GitTarget refuses says, with the fix."""
    names = sorted({f"{r.group}/{r.resource}".lstrip("/") for r in refused})
    others = [n for n in names if n != "secrets"]
    where = f"GitTarget {target.meta.name}"
    fixes = []
    if "secrets" in names:
        fixes.append("add spec.encryption to the GitTarget or remove secrets from the rule")
    if others:
        fixes.append(f"remove {', '.join(others)} from the rule (sensitive: never written)")
    return (
        f"selects {', '.join(names)}, which {where} never writes to Git in plain text (the "
        f"rest is mirrored): {'; '.join(fixes)}"
    )
