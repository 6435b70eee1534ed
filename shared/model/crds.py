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
from shared.model.config import ApplierRef, OnRefusal, PruneMode
from shared.model.crd_appliers import parse_applier
from shared.model.crd_meta import (
    AccessFrom,
    Condition,
    LabelSelector,
    Meta,
    Raw,
    Requirement,
    parse_access_from,
    parse_conditions,
    parse_meta,
    parse_selector,
)
from shared.model.crd_meta import as_map as _map
from shared.model.crd_meta import strings as _strings
from shared.model.crd_rules import (
    ClusterWatchRuleView,
    RuleView,
    WatchRuleView,
    parse_cluster_watch_rule,
    parse_watch_rule,
)
from shared.model.duration import DurationError, parse_duration
from shared.model.ids import GitTargetUid
from shared.model.placement import Placement, parse_placement
from shared.model.recipients import SopsError, parse_recipients
from shared.model.target_commit import CommitSettings, parse_commit_settings
from shared.model.target_controls import TargetControls, parse_controls
from shared.model.webhook import WebhookEndpoint

# The parts every resource shares (crd_meta), the GitTarget's applier reference (crd_appliers)
# and the watch rules' views (crd_rules) live in modules of their own; their names stay
# importable from here.
__all__ = [
    "AccessFrom",
    "ApplierAllowance",
    "AttributionSpec",
    "ClusterProviderView",
    "ClusterWatchRuleView",
    "Condition",
    "EncryptionView",
    "GitProviderView",
    "GitTargetView",
    "LabelSelector",
    "Meta",
    "Raw",
    "Requirement",
    "RuleView",
    "SigningRef",
    "WatchRuleView",
    "parse_access_from",
    "parse_applier",
    "parse_cluster_provider",
    "parse_cluster_watch_rule",
    "parse_conditions",
    "parse_encryption",
    "parse_git_provider",
    "parse_git_target",
    "parse_meta",
    "parse_selector",
    "parse_watch_rule",
]


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
    #: spec.knownHostsRef as ``Kind/name`` (ConfigMap unless it says Secret); "" = none.
    known_hosts_ref: str = ""


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
    #: spec.placement and spec.serializeNamespace (issue 27; ``shared.model.placement``), and
    #: ``status.placement`` as stored (written only when it changes).
    placement: Placement = field(default_factory=Placement)
    placement_status: Raw | None = field(default=None, compare=False)
    #: spec.commit.window and spec.commit.message (issue 27.7; ``shared.model.target_commit``).
    commit: CommitSettings = field(default_factory=CommitSettings)
    #: spec.suspend, the reconcile request and what status shows of them (P7, P8, P10).
    controls: TargetControls = field(default_factory=TargetControls)

    @property
    def uid(self) -> GitTargetUid:
        """The incarnation this view belongs to."""
        return GitTargetUid(self.meta.uid)


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
        known_hosts_ref=_known_hosts_ref(spec.get("knownHostsRef")),
    )


def _known_hosts_ref(raw: object) -> str:
    """``spec.knownHostsRef`` as ``Kind/name`` ("" when it names nothing)."""
    ref = _map(raw)
    name = str(ref.get("name") or "")
    return f"{ref.get('kind') or defaults.KNOWN_HOSTS_KIND}/{name}" if name else ""


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
        placement=parse_placement(spec),
        placement_status=_map(_map(raw.get("status")).get("placement")) or None,
        commit=parse_commit_settings(spec),
        controls=parse_controls(raw),
    )


def _signing(raw: Raw) -> SigningRef | None:
    """``spec.commit.signing``; absent (or without a Secret name) is None: unsigned."""
    name = str(_map(raw.get("secretRef")).get("name") or "")
    if not name:
        return None
    return SigningRef(name, raw.get("generateWhenMissing") is True)
