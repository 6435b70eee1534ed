"""The default of every custom-resource field the product reads, spelled here and nowhere else.

The API server fills a schema default when an object is written, but an object stored before
the default existed lacks it, so the parsers in ``shared.model.crds`` apply these constants
again. Records built from the parsed views (``BranchConfig``, ``TargetConfig``, ``Committer``)
take every value as a required field, so a default can never drift between copies.

``SCHEMA_DEFAULTS`` ties each constant to the field whose OpenAPI ``default:`` it restates;
``tests/unit/model/test_crd_defaults.py`` walks ``charts/gitops-reverser/crds/`` and checks the
two agree in both directions. The quiet period and the message templates have no schema default
(the CRD leaves them out on purpose), so they are listed apart, in ``PRODUCT_DEFAULTS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from shared.model.duration import parse_duration

PruneMode = Literal["Never", "OnEvent", "Always"]
OnRefusal = Literal["None", "Reapply", "PushEmptyCommit"]

#: GitProvider ``spec.push.commitWindow``.
COMMIT_WINDOW: Final = "5s"
#: GitProvider ``spec.commit.committer.name``.
COMMITTER_NAME: Final = "GitOps Reverser"
#: GitProvider ``spec.commit.committer.email``.
COMMITTER_EMAIL: Final = "noreply@gitopsreverser.io"
#: GitProvider ``spec.knownHostsRef.kind``.
KNOWN_HOSTS_KIND: Final = "ConfigMap"
#: GitTarget ``spec.clusterProviderRef.name`` (the schema defaults the whole reference).
CLUSTER_PROVIDER: Final = "default"
#: GitTarget ``spec.prune.mode``.
PRUNE_MODE: Final[PruneMode] = "OnEvent"
#: GitTarget ``spec.onRefusal``: no consent to revert a refused edit unless asked (S1).
ON_REFUSAL: Final[OnRefusal] = "None"
#: GitTarget ``spec.applier.webhook.timeout``: how long one webhook POST may take (D7).
WEBHOOK_TIMEOUT: Final = "10s"
#: GitTarget ``spec.encryption.provider``: SOPS is the only format (P3).
ENCRYPTION_PROVIDER: Final = "sops"
#: GitTarget ``spec.encryption.age.recipientsSecretRef.key``: the Secret key holding recipients.
RECIPIENTS_KEY: Final = "recipients"
#: ClusterProvider ``spec.attribution.tokenSecretRef.key``: the Secret key holding the audit
#: webhook's bearer token.
AUDIT_TOKEN_KEY: Final = "token"

#: GitTarget ``spec.applier.quietPeriod`` when left out (behaviour.md §1). No schema default,
#: because a CEL rule refuses a quietPeriod next to an applicationRef.
QUIET_PERIOD: Final = "30s"
#: GitProvider ``spec.commit.message.eventTemplate`` when left out: Go template syntax, the Go
#: operator's default (facts 3.5, 2.1; ``shared.model.templates``).
EVENT_TEMPLATE: Final = "[{{.Operation}}] {{.APIVersion}}/{{.Resource}}/{{.Name}}"
#: GitProvider ``spec.commit.message.groupTemplate`` when left out; the Go operator's default.
GROUP_TEMPLATE: Final = "{{.Author}} on {{.GitTarget}}: {{.Count}} resource(s)"

#: The durations in seconds, derived so that the spelling above stays the only one.
COMMIT_WINDOW_S: Final = parse_duration(COMMIT_WINDOW).total_seconds()
QUIET_PERIOD_S: Final = parse_duration(QUIET_PERIOD).total_seconds()
WEBHOOK_TIMEOUT_S: Final = parse_duration(WEBHOOK_TIMEOUT).total_seconds()

#: (kind, field path) -> the constant that restates the field's schema ``default:``.
#: CommitRequest ``spec.closeDelaySeconds`` (P6): close the bound window at receipt.
CLOSE_DELAY_S: Final = 0

SCHEMA_DEFAULTS: Final[Mapping[tuple[str, str], str | int]] = {
    ("GitProvider", "spec.push.commitWindow"): COMMIT_WINDOW,
    ("GitProvider", "spec.commit.committer.name"): COMMITTER_NAME,
    ("GitProvider", "spec.commit.committer.email"): COMMITTER_EMAIL,
    ("GitProvider", "spec.knownHostsRef.kind"): KNOWN_HOSTS_KIND,
    ("GitTarget", "spec.clusterProviderRef.name"): CLUSTER_PROVIDER,
    ("GitTarget", "spec.prune.mode"): PRUNE_MODE,
    ("GitTarget", "spec.onRefusal"): ON_REFUSAL,
    ("GitTarget", "spec.applier.webhook.timeout"): WEBHOOK_TIMEOUT,
    ("CommitRequest", "spec.closeDelaySeconds"): CLOSE_DELAY_S,
    ("GitTarget", "spec.encryption.provider"): ENCRYPTION_PROVIDER,
    ("GitTarget", "spec.encryption.age.recipientsSecretRef.key"): RECIPIENTS_KEY,
    ("ClusterProvider", "spec.attribution.tokenSecretRef.key"): AUDIT_TOKEN_KEY,
}
#: (kind, field path) -> the product's value for a field whose schema has no ``default:``.
PRODUCT_DEFAULTS: Final[Mapping[tuple[str, str], str]] = {
    ("GitTarget", "spec.applier.quietPeriod"): QUIET_PERIOD,
    ("GitProvider", "spec.commit.message.eventTemplate"): EVENT_TEMPLATE,
    ("GitProvider", "spec.commit.message.groupTemplate"): GROUP_TEMPLATE,
}
