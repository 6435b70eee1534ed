"""Typed views of the four custom resources, parsed once from the API's JSON.

The watcher and the decisions read GitProviders, ClusterProviders, GitTargets and WatchRules;
reading raw dicts everywhere would spread defaults and spelling across the code. Each view is
built by one parser that applies the CRD's defaults again (an object stored before a default
was added lacks it), so every reader sees the same values. The defaults themselves are the
constants of ``shared.model.defaults``; the views have no defaults of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from shared.model import defaults
from shared.model.appliers import KINDS, KindRules
from shared.model.config import ApplierRef, OnRefusal, PruneMode
from shared.model.duration import DurationError, parse_duration
from shared.model.events import OPERATIONS, Operation
from shared.model.ids import GitTargetUid
from shared.model.recipients import SopsError, parse_recipients
from shared.model.webhook import MAX_TIMEOUT_S, WebhookEndpoint, url_problem

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``status.conditions`` entry (the metav1.Condition shape)."""

    type: str
    status: str  # "True", "False" or "Unknown"
    reason: str
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int = 0

    def to_raw(self) -> dict[str, Any]:
        """The entry as the API stores it."""
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
            "observedGeneration": self.observed_generation,
        }


@dataclass(frozen=True, slots=True)
class Meta:
    """The identity and versions of one object."""

    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry of a label selector."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A standard label selector; an empty one matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class AccessFrom:
    """Which GitTarget namespaces a ClusterProvider admits (names, or a selector, or both)."""

    names: tuple[str, ...] = ()
    selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class ApplierAllowance:
    """One ``spec.crossNamespaceAppliers[]`` entry: the appliers in ``namespace`` may serve the
    GitTargets of the other namespaces ``access_from`` admits (T2)."""

    namespace: str
    access_from: AccessFrom | None  # None admits nothing


@dataclass(frozen=True, slots=True)
class AttributionSpec:
    """``spec.attribution``: the audit route of this cluster and the Secret (in the product's
    namespace) whose ``token_key`` is the bearer token kube-apiserver's webhook sends."""

    audit_route: str
    token_secret: str
    token_key: str = defaults.AUDIT_TOKEN_KEY


@dataclass(frozen=True, slots=True)
class ClusterProviderView:
    """A cluster to read from; ``kubeconfig_secret`` None means the cluster we run in."""

    meta: Meta
    kubeconfig_secret: tuple[str, str] | None  # (Secret name, key) in our own namespace
    access_from: AccessFrom | None  # None admits nothing
    conditions: tuple[Condition, ...] = ()
    #: spec.crossNamespaceAppliers (T2); empty: a GitTarget's applier must be in its namespace.
    cross_namespace_appliers: tuple[ApplierAllowance, ...] = ()
    #: spec.clusterScoped.accessFrom: the GitTarget namespaces a ClusterWatchRule may feed
    #: with this cluster's cluster-scoped objects; None admits none.
    cluster_scoped: AccessFrom | None = None
    #: spec.attribution; None: commits of this cluster's edits are authored by the committer.
    attribution: AttributionSpec | None = None


@dataclass(frozen=True, slots=True)
class GitProviderView:
    """A repository and how we write to it (the non-secret parts)."""

    meta: Meta
    url: str
    secret_name: str
    allowed_branches: tuple[str, ...]
    commit_window_s: float
    committer_name: str
    committer_email: str
    message_one: str
    message_many: str
    conditions: tuple[Condition, ...]
    receiver_type: str  # spec.receiver.type; empty: no webhook endpoint
    receiver_secret: str  # spec.receiver.secretRef.name (key "token")
    webhook_path: str  # status.receiver.webhookPath as last written


@dataclass(frozen=True, slots=True)
class SigningRef:
    """``spec.commit.signing`` of a GitTarget: its key's Secret, in its own namespace."""

    secret_name: str
    generate_when_missing: bool = False


@dataclass(frozen=True, slots=True)
class EncryptionView:
    """``spec.encryption`` (P3): the age recipients Secrets are sealed for."""

    recipients: tuple[str, ...]  # spec.encryption.age.recipients, checked and sorted
    secret_name: str  # spec.encryption.age.recipientsSecretRef.name; "" = none
    secret_key: str  # its key (default ``recipients``)
    problem: str = ""  # why the recipients cannot be used (the CRD's rules again)


@dataclass(frozen=True, slots=True)
class GitTargetView:
    """One folder on one branch."""

    meta: Meta
    provider: str
    branch: str
    path: str
    cluster_provider: str
    prune: PruneMode
    on_refusal: OnRefusal
    conditions: tuple[Condition, ...]
    applier: ApplierRef | None  # spec.applier, resolved to its ClusterProvider
    quiet_period_s: float  # spec.applier.quietPeriod (A3), read even without an applier
    applier_problem: str  # why spec.applier cannot be used (the CRD's CEL rules again)
    #: ``status.applier`` as stored (S3), to write it only when it changes.
    applier_status: Raw | None = field(default=None, compare=False)
    webhook: WebhookEndpoint | None = None  # spec.applier.webhook, when the applier is one
    #: spec.sensitive: (group, kind) refused like Secrets (M10); kind ``*``: the whole group.
    sensitive: tuple[tuple[str, str], ...] = ()
    #: spec.commit.signing (P6): the Secret in this namespace holding the SSH key ("" =
    #: unsigned), whether to generate a key into it when it has none, and the public key
    #: ``status.signingPublicKey`` last showed (written only when it changes).
    signing: SigningRef | None = None
    signing_public_key: str = field(default="", compare=False)
    #: spec.encryption: Secrets are sealed for these recipients instead of refused (P3).
    encryption: EncryptionView | None = None

    @property
    def uid(self) -> GitTargetUid:
        """The incarnation this view belongs to."""
        return GitTargetUid(self.meta.uid)


@dataclass(frozen=True, slots=True)
class RuleView:
    """One ``spec.rules[]`` entry; ``api_versions`` empty means each group's preferred."""

    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    operations: frozenset[Operation]


@dataclass(frozen=True, slots=True)
class WatchRuleView:
    """Which objects of its own namespace a GitTarget mirrors."""

    meta: Meta
    target: str
    rules: tuple[RuleView, ...]
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterWatchRuleView:
    """Which cluster-scoped objects a GitTarget (named by namespace and name) mirrors."""

    meta: Meta
    target_namespace: str
    target: str
    rules: tuple[RuleView, ...]
    conditions: tuple[Condition, ...] = ()


def _map(value: Any) -> Raw:
    return cast(Raw, value) if isinstance(value, Mapping) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in _map(value).items()))


def parse_meta(raw: Raw) -> Meta:
    """The identity of any object."""
    meta = _map(raw.get("metadata"))
    return Meta(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        resource_version=str(meta.get("resourceVersion", "")),
        labels=_pairs(meta.get("labels")),
    )


def parse_conditions(raw: Raw) -> tuple[Condition, ...]:
    """``status.conditions`` as records (entries without a type are skipped)."""
    entries = _map(raw.get("status")).get("conditions")
    if not isinstance(entries, list):
        return ()
    return tuple(
        Condition(
            type=str(e["type"]),
            status=str(e.get("status", "Unknown")),
            reason=str(e.get("reason", "")),
            message=str(e.get("message", "")),
            last_transition_time=str(e.get("lastTransitionTime", "")),
            observed_generation=int(e.get("observedGeneration") or 0),
        )
        for e in entries
        if isinstance(e, Mapping) and e.get("type")
    )


def parse_selector(raw: Any) -> LabelSelector:
    """A label selector (``matchLabels`` and ``matchExpressions``)."""
    selector = _map(raw)
    expressions = tuple(
        Requirement(str(e.get("key", "")), str(e.get("operator", "")), _strings(e.get("values")))
        for e in selector.get("matchExpressions") or []
        if isinstance(e, Mapping)
    )
    return LabelSelector(_pairs(selector.get("matchLabels")), expressions)


def parse_cluster_provider(raw: Raw) -> ClusterProviderView:
    """A ClusterProvider."""
    spec = _map(raw.get("spec"))
    ref = _map(_map(spec.get("kubeConfig")).get("secretRef"))
    secret = (str(ref["name"]), str(ref.get("key", ""))) if ref.get("name") else None
    allowances = tuple(
        ApplierAllowance(str(entry["namespace"]), parse_access_from(entry.get("accessFrom")))
        for entry in spec.get("crossNamespaceAppliers") or []
        if isinstance(entry, Mapping) and entry.get("namespace")
    )
    return ClusterProviderView(
        parse_meta(raw),
        secret,
        parse_access_from(spec.get("accessFrom")),
        parse_conditions(raw),
        allowances,
        parse_access_from(_map(spec.get("clusterScoped")).get("accessFrom")),
        _attribution(raw, spec.get("attribution")),
    )


def _attribution(raw: Raw, value: Any) -> AttributionSpec | None:
    """``spec.attribution`` (the route defaults to the provider's name), None when absent or
    without a token Secret."""
    if not isinstance(value, Mapping):
        return None
    ref = _map(value.get("tokenSecretRef"))
    if not ref.get("name"):
        return None
    route = str(value.get("auditRoute") or _map(raw.get("metadata")).get("name") or "")
    return AttributionSpec(route, str(ref["name"]), str(ref.get("key") or defaults.AUDIT_TOKEN_KEY))


def parse_access_from(raw: Any) -> AccessFrom | None:
    """An ``accessFrom`` (names and a selector); absent or not an object is None (admits
    nothing), an empty object admits nothing either, ``selector: {}`` every namespace."""
    if not isinstance(raw, Mapping):
        return None
    selector = raw.get("selector")
    return AccessFrom(
        names=_strings(raw.get("names")),
        selector=parse_selector(selector) if isinstance(selector, Mapping) else None,
    )


def _window_seconds(text: Any) -> float:
    try:
        return parse_duration(str(text)).total_seconds()
    except DurationError:
        return defaults.COMMIT_WINDOW_S


def parse_git_provider(raw: Raw) -> GitProviderView:
    """A GitProvider."""
    spec = _map(raw.get("spec"))
    commit = _map(spec.get("commit"))
    committer = _map(commit.get("committer"))
    message = _map(commit.get("message"))
    return GitProviderView(
        meta=parse_meta(raw),
        url=str(spec.get("url", "")),
        secret_name=str(_map(spec.get("secretRef")).get("name", "")),
        allowed_branches=_strings(spec.get("allowedBranches")),
        commit_window_s=_window_seconds(
            _map(spec.get("push")).get("commitWindow", defaults.COMMIT_WINDOW)
        ),
        committer_name=str(committer.get("name") or defaults.COMMITTER_NAME),
        committer_email=str(committer.get("email") or defaults.COMMITTER_EMAIL),
        message_one=str(message.get("eventTemplate") or defaults.EVENT_TEMPLATE),
        message_many=str(message.get("groupTemplate") or defaults.GROUP_TEMPLATE),
        conditions=parse_conditions(raw),
        receiver_type=str(_map(spec.get("receiver")).get("type") or ""),
        receiver_secret=str(_map(_map(spec.get("receiver")).get("secretRef")).get("name") or ""),
        webhook_path=str(_map(_map(raw.get("status")).get("receiver")).get("webhookPath") or ""),
    )


def parse_applier(
    spec: Raw, own_cluster: str, namespace: str
) -> tuple[ApplierRef | None, float, str, WebhookEndpoint | None]:
    """``spec.applier`` as a reference, the GitTarget's quiet period in seconds, why the
    reference cannot be used ("" when it can), and the webhook endpoint when it names one.
    Absent: None, the default period, "" and None. The fields and what each allows come from
    the kinds' table (``KINDS``)."""
    applier = _map(spec.get("applier"))
    if not applier:
        return None, defaults.QUIET_PERIOD_S, "", None
    named = [rules for rules in KINDS.values() if applier.get(rules.spec_field)]
    problem = _applier_problem(applier, named)
    if problem:
        return None, defaults.QUIET_PERIOD_S, problem, None
    try:
        quiet = parse_duration(str(applier.get("quietPeriod", defaults.QUIET_PERIOD)))
    except DurationError as err:
        return None, defaults.QUIET_PERIOD_S, f"spec.applier.quietPeriod: {err}", None
    cluster = str(_map(applier.get("clusterProviderRef")).get("name") or own_cluster)
    rules = named[0]
    if not rules.names_object:  # an endpoint in the GitTarget's namespace (D7)
        endpoint, problem = _webhook(_map(applier[rules.spec_field]))
        if endpoint is None:
            return None, defaults.QUIET_PERIOD_S, problem, None
        ref = ApplierRef(rules.kind, namespace, endpoint.name, cluster)
        return ref, quiet.total_seconds(), "", endpoint
    target = _map(applier[rules.spec_field])
    name, ref_namespace = str(target.get("name", "")), str(target.get("namespace", ""))
    return ApplierRef(rules.kind, ref_namespace, name, cluster), quiet.total_seconds(), "", None


def _applier_problem(applier: Raw, named: list[KindRules]) -> str:
    """Why ``spec.applier``'s fields cannot be used together ("" when they can)."""
    if len(named) != 1:
        fields = [rules.spec_field for rules in KINDS.values()]
        listed = ", ".join(fields[:-1]) + " and " + fields[-1]
        return f"spec.applier must name exactly one of {listed}"
    if not named[0].quiet_period and "quietPeriod" in applier:
        allowed = " or a ".join(r.spec_field for r in KINDS.values() if r.quiet_period)
        return f"spec.applier.quietPeriod only applies to a {allowed}"
    return ""


def _webhook(raw: Raw) -> tuple[WebhookEndpoint | None, str]:
    """``spec.applier.webhook`` (D7), or why it cannot be used (the CRD's rules again)."""
    url = str(raw.get("url", ""))
    problem = url_problem(url)
    secret = str(_map(raw.get("secretRef")).get("name") or "")
    if problem is None and not secret:
        problem = "spec.applier.webhook.secretRef.name is required"
    try:
        timeout = parse_duration(
            str(raw.get("timeout") or defaults.WEBHOOK_TIMEOUT)
        ).total_seconds()
    except DurationError as err:
        problem = problem or f"spec.applier.webhook.timeout: {err}"
        timeout = defaults.WEBHOOK_TIMEOUT_S
    if problem is None and not 0 < timeout <= MAX_TIMEOUT_S:
        problem = (
            f"spec.applier.webhook.timeout must be more than 0s and at most {MAX_TIMEOUT_S:g}s"
        )
    if problem is not None:
        return None, problem
    return WebhookEndpoint(url, secret, timeout), ""


def _stored_applier(raw: Raw) -> Raw | None:
    value = _map(raw.get("status")).get("applier")
    return cast(Raw, value) if isinstance(value, Mapping) else None


def parse_encryption(spec: Raw) -> EncryptionView | None:
    """``spec.encryption``, or None when Secrets are refused (M10)."""
    raw = spec.get("encryption")
    if not isinstance(raw, Mapping):
        return None
    age = _map(raw.get("age"))
    ref = _map(age.get("recipientsSecretRef"))
    listed = _strings(age.get("recipients"))
    name = str(ref.get("name") or "")
    key = str(ref.get("key") or defaults.RECIPIENTS_KEY)
    problem = ""
    recipients: tuple[str, ...] = ()
    if str(raw.get("provider") or defaults.ENCRYPTION_PROVIDER) != defaults.ENCRYPTION_PROVIDER:
        problem = "spec.encryption.provider must be sops"
    elif listed:
        try:
            recipients = parse_recipients(listed)
        except SopsError as err:
            problem = f"spec.encryption.age.recipients: {err}"
    elif not name:
        problem = "spec.encryption.age needs recipients or recipientsSecretRef"
    return EncryptionView(recipients, name, key, problem)


def parse_git_target(raw: Raw) -> GitTargetView:
    """A GitTarget."""
    spec = _map(raw.get("spec"))
    prune = str(_map(spec.get("prune")).get("mode") or defaults.PRUNE_MODE)
    on_refusal = str(spec.get("onRefusal") or defaults.ON_REFUSAL)
    cluster = str(_map(spec.get("clusterProviderRef")).get("name") or defaults.CLUSTER_PROVIDER)
    namespace = str(_map(raw.get("metadata")).get("namespace", ""))
    applier, quiet_period_s, applier_problem, webhook = parse_applier(spec, cluster, namespace)
    return GitTargetView(
        meta=parse_meta(raw),
        provider=str(_map(spec.get("providerRef")).get("name", "")),
        branch=str(spec.get("branch", "")),
        path=str(spec.get("path", "")),
        cluster_provider=cluster,
        prune=cast(PruneMode, prune if prune in get_args(PruneMode) else defaults.PRUNE_MODE),
        on_refusal=cast(
            OnRefusal, on_refusal if on_refusal in get_args(OnRefusal) else defaults.ON_REFUSAL
        ),
        conditions=parse_conditions(raw),
        applier=applier,
        quiet_period_s=quiet_period_s,
        applier_problem=applier_problem,
        applier_status=_stored_applier(raw),
        webhook=webhook,
        sensitive=tuple(
            (str(s.get("group") or ""), str(s.get("kind") or ""))
            for s in spec.get("sensitive") or []
            if isinstance(s, Mapping) and s.get("kind")
        ),
        signing=_signing(_map(_map(spec.get("commit")).get("signing"))),
        signing_public_key=str(_map(raw.get("status")).get("signingPublicKey") or ""),
        encryption=parse_encryption(spec),
    )


def _signing(raw: Raw) -> SigningRef | None:
    """``spec.commit.signing``; absent (or without a Secret name) is None: unsigned."""
    name = str(_map(raw.get("secretRef")).get("name") or "")
    if not name:
        return None
    return SigningRef(name, raw.get("generateWhenMissing") is True)


def _operations(value: Any) -> frozenset[Operation]:
    named = _strings(value)
    if not named or "*" in named:
        return frozenset(OPERATIONS)
    return frozenset(op for op in OPERATIONS if op in named)


def parse_watch_rule(raw: Raw) -> WatchRuleView:
    """A WatchRule."""
    spec = _map(raw.get("spec"))
    target = str(_map(spec.get("targetRef")).get("name", ""))
    return WatchRuleView(parse_meta(raw), target, _rules(spec), parse_conditions(raw))


def parse_cluster_watch_rule(raw: Raw) -> ClusterWatchRuleView:
    """A ClusterWatchRule."""
    spec = _map(raw.get("spec"))
    ref = _map(spec.get("targetRef"))
    return ClusterWatchRuleView(
        parse_meta(raw),
        str(ref.get("namespace", "")),
        str(ref.get("name", "")),
        _rules(spec),
        parse_conditions(raw),
    )


def _rules(spec: Raw) -> tuple[RuleView, ...]:
    return tuple(
        RuleView(
            api_groups=_strings(r.get("apiGroups")),
            api_versions=_strings(r.get("apiVersions")),
            resources=_strings(r.get("resources")),
            operations=_operations(r.get("operations")),
        )
        for r in spec.get("rules") or []
        if isinstance(r, Mapping)
    )
