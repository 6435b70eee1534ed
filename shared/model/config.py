"""What the watcher publishes for the branch workers: each branch's and GitTarget's settings.

The watcher reads GitProviders and GitTargets from Kubernetes and publishes the non-secret
parts here, so a branch worker needs the Kubernetes API only to read a GitProvider's Secret
(credentials never enter Redis, R5). Every field the CRDs default is required here: the parsers
in ``shared.model.crds`` already applied ``shared.model.defaults``, and a second default on the
record could only ever disagree with it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from shared.model.appliers import ApplierKind
from shared.model.defaults import QUIET_PERIOD_S, OnRefusal, PruneMode
from shared.model.ids import ApplierKey, Branch, GitTargetUid
from shared.model.placement import Placement
from shared.model.webhook import WebhookEndpoint

__all__ = ["ApplierRef", "BranchConfig", "OnRefusal", "PruneMode", "TargetConfig", "appliers_of"]


@dataclass(frozen=True, slots=True)
class BranchConfig:
    """A branch as its GitProvider configures it (the longest window is a process setting)."""

    url: str
    branch: str
    provider_namespace: str
    provider_name: str
    secret_name: str  # GitProvider spec.secretRef.name, in the provider's namespace; "" = none
    commit_window_s: float
    committer_name: str
    committer_email: str
    message_one: str
    message_many: str
    #: GitProvider spec.knownHostsRef as ``Kind/name`` in the provider's namespace; "" = none.
    known_hosts: str = ""

    @property
    def ref(self) -> Branch:
        """The branch this config is for."""
        return Branch(self.url, self.branch)

    @property
    def writer(self) -> str:
        """Who the branch's commits are made and pushed as (T1): the Secret (by namespace and
        name; none for a GitProvider without one), the committer, the templates and the window.
        GitProviders with equal writers may write one branch: none uses a Secret, committer or
        template that is not also its own."""
        secret = f"{self.provider_namespace}/{self.secret_name}" if self.secret_name else ""
        if self.known_hosts:  # another host key trusted is another writer
            secret += f"+{self.known_hosts}"
        fields = [secret, self.committer_name, self.committer_email, self.message_one]
        return json.dumps([*fields, self.message_many, self.commit_window_s])

    def writes_for(self, target: TargetConfig) -> bool:
        """T1: whether this branch's settings may carry the GitTarget's writes (its GitProvider
        has this writer). A record written before GitTargets carried their writer is matched
        by namespace."""
        if not target.writer:
            return target.namespace == self.provider_namespace
        return target.writer == self.writer

    def to_json(self) -> str:
        """Stable JSON for Redis."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BranchConfig:
        """The inverse of ``to_json``."""
        data = json.loads(text)
        data.pop("max_window_s", None)  # written before the longest window became a setting
        return cls(**data)


@dataclass(frozen=True, slots=True)
class ApplierRef:
    """Which applier a GitTarget names (spec.applier), resolved to its ClusterProvider.

    Identity only, so two GitTargets naming one applier hold equal, hashable references (A3);
    how long each waits before a CatchUp is the GitTarget's own ``quiet_period_s``.
    """

    kind: ApplierKind
    namespace: str
    name: str
    cluster_provider: str

    @property
    def key(self) -> ApplierKey:
        """The applier's key: kind, ClusterProvider, namespace, name (behaviour.md §0)."""
        text = f"{self.kind}\0{self.cluster_provider}\0{self.namespace}\0{self.name}"
        return ApplierKey(hashlib.sha256(text.encode()).hexdigest()[:24])

    def to_data(self) -> dict[str, str]:
        """The reference as plain JSON data."""
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "cluster_provider": self.cluster_provider,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ApplierRef:
        """The inverse of ``to_data``; other keys (a quietPeriod written by an older version
        inside the reference) are ignored."""
        return cls(data["kind"], data["namespace"], data["name"], data["cluster_provider"])


@dataclass(frozen=True, slots=True)
class TargetConfig:
    """One GitTarget incarnation: its folder on its branch, and how it prunes and consents."""

    uid: GitTargetUid
    namespace: str
    name: str
    url: str
    branch: str
    path: str
    prune: PruneMode
    on_refusal: OnRefusal
    applier: ApplierRef | None  # None: nobody is ever asked to apply this folder
    quiet_period_s: float  # spec.applier.quietPeriod, the CRD default applied (A3)
    extra: dict[str, str] = field(default_factory=dict)
    webhook: WebhookEndpoint | None = None  # spec.applier.webhook, when the applier is one (D7)
    writer: str = ""  # ``BranchConfig.writer`` of its GitProvider (T1)
    #: spec.commit.signing.secretRef.name, in the GitTarget's namespace; "" = unsigned (P6).
    #: The name only: the key is read from the Secret by the branch's owner when it commits.
    signing_secret: str = ""
    #: spec.encryption's age recipients (public keys): Secrets are written sealed for them
    #: (P3); empty: Secrets are refused (M10).
    recipients: tuple[str, ...] = ()
    #: The audit route of its ClusterProvider's ``spec.attribution``; "": attribution is off
    #: and its commits are authored by the committer.
    audit_route: str = ""
    #: P6: the GitTarget is valid but for its signing key, so it is not served (no watches,
    #: nothing of it written) yet stays registered with its branch: the branch is never retired
    #: under its held writes, and whoever owns the branch keeps them pending until the key works
    #: and the watcher publishes it without this mark.
    key_held: bool = False
    #: spec.placement and spec.serializeNamespace (issue 27): where new objects' files go.
    placement: Placement = field(default_factory=Placement)
    #: spec.commit.window (None: the GitProvider's) and the templates ("": the GitProvider's
    #: wording), issue 27.7.
    commit_window_s: float | None = None
    live_template: str = ""
    reconcile_template: str = ""

    def window_s(self, branch: BranchConfig) -> float:
        """The commit window of this GitTarget's writes: its own, else its GitProvider's."""
        return branch.commit_window_s if self.commit_window_s is None else self.commit_window_s

    #: P7: spec.suspend. Its events wait in Redis (``shared.store.suspension``) and it owes
    #: its applier nothing until it is resumed.
    suspended: bool = False

    @property
    def ref(self) -> Branch:
        """The branch this GitTarget writes to."""
        return Branch(self.url, self.branch)

    @property
    def consents(self) -> bool:
        """S1: ``onRefusal: Reapply`` is consent that a refused edit is reverted."""
        return self.on_refusal == "Reapply"

    def to_json(self) -> str:
        """Stable JSON for Redis."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TargetConfig:
        """The inverse of ``to_json``."""
        data = json.loads(text)
        data["uid"] = GitTargetUid(data["uid"])
        applier = data.get("applier")
        data["applier"] = ApplierRef.from_data(applier) if applier else None
        webhook = data.get("webhook")
        data["webhook"] = WebhookEndpoint.from_data(webhook) if webhook else None
        data["recipients"] = tuple(data.get("recipients") or ())
        data["placement"] = Placement.from_data(data.get("placement"))
        if "quiet_period_s" not in data:  # written before the period left the reference
            data["quiet_period_s"] = float((applier or {}).get("quiet_period_s", QUIET_PERIOD_S))
        return cls(**data)


def appliers_of(
    targets: Iterable[TargetConfig], *, with_suspended: bool = False
) -> dict[ApplierRef, list[TargetConfig]]:
    """Each applier the GitTargets name, with the GitTargets naming it (A3: one applier can
    serve several GitTargets; their obligations are merged on the one record). A suspended
    GitTarget owes its applier nothing (P7) and is left out; ``with_suspended`` keeps an
    applier only suspended GitTargets name, with an empty list, so that what it was owed
    before is dropped."""
    named: dict[ApplierRef, list[TargetConfig]] = {}
    for target in targets:
        if target.applier is None:
            continue
        if target.suspended:
            if with_suspended:
                named.setdefault(target.applier, [])
            continue
        named.setdefault(target.applier, []).append(target)
    return named
