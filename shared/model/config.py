"""What the watcher publishes for the branch workers: each branch's and GitTarget's settings.

The watcher reads GitProviders and GitTargets from Kubernetes and publishes the non-secret
parts here, so a branch worker needs the Kubernetes API only to read a GitProvider's Secret
(credentials never enter Redis, R5).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Literal

from shared.model.ids import ApplierKey, Branch, GitTargetUid

PruneMode = Literal["Never", "OnEvent", "Always"]
OnRefusal = Literal["None", "Reapply"]

#: Commit message templates (GitProvider spec.commit.message); Python str.format fields.
DEFAULT_ONE_WRITE = "{operation} {kind} {namespace}/{name}"
DEFAULT_MANY_WRITES = "Mirror {count} API edits to {path}"


@dataclass(frozen=True, slots=True)
class BranchConfig:
    """A branch as its GitProvider configures it."""

    url: str
    branch: str
    provider_namespace: str
    provider_name: str
    secret_name: str = ""  # GitProvider spec.secretRef.name, in the provider's namespace
    commit_window_s: float = 5.0
    max_window_s: float = 60.0
    committer_name: str = "GitOps Reverser"
    committer_email: str = "noreply@gitopsreverser.io"
    message_one: str = DEFAULT_ONE_WRITE
    message_many: str = DEFAULT_MANY_WRITES

    @property
    def ref(self) -> Branch:
        """The branch this config is for."""
        return Branch(self.url, self.branch)

    def to_json(self) -> str:
        """Stable JSON for Redis."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BranchConfig:
        """The inverse of ``to_json``."""
        return cls(**json.loads(text))


@dataclass(frozen=True, slots=True)
class ApplierRef:
    """The applier a GitTarget names (spec.applier), resolved to its ClusterProvider."""

    kind: Literal["Kustomization", "Application"]
    namespace: str
    name: str
    cluster_provider: str = "default"
    quiet_period_s: float = 30.0  # an omitted quietPeriod means 30s

    @property
    def key(self) -> ApplierKey:
        """The applier's key: kind, ClusterProvider, namespace, name (behaviour.md §0)."""
        text = f"{self.kind}\0{self.cluster_provider}\0{self.namespace}\0{self.name}"
        return ApplierKey(hashlib.sha256(text.encode()).hexdigest()[:24])


@dataclass(frozen=True, slots=True)
class TargetConfig:
    """One GitTarget incarnation: its folder on its branch, and how it prunes and consents."""

    uid: GitTargetUid
    namespace: str
    name: str
    url: str
    branch: str
    path: str
    prune: PruneMode = "OnEvent"
    on_refusal: OnRefusal = "None"
    extra: dict[str, str] = field(default_factory=dict)
    applier: ApplierRef | None = None

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
        if data.get("applier"):
            data["applier"] = ApplierRef(**data["applier"])
        return cls(**data)
