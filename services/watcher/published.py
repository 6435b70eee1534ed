"""What the watcher publishes for a served GitTarget and its branch: the records the branch
workers read (``shared.model.config``), built from the GitTarget and its GitProvider."""

from __future__ import annotations

from collections.abc import Iterable

from shared.model.config import BranchConfig, TargetConfig
from shared.model.crds import ClusterProviderView, GitProviderView, GitTargetView
from shared.model.ids import BranchKey


def branch_config(provider: GitProviderView, branch: str) -> BranchConfig:
    """A branch's settings, from the GitProvider that writes it."""
    return BranchConfig(
        url=provider.url,
        branch=branch,
        provider_namespace=provider.meta.namespace,
        provider_name=provider.meta.name,
        secret_name=provider.secret_name,
        commit_window_s=provider.commit_window_s,
        committer_name=provider.committer_name,
        committer_email=provider.committer_email,
        message_one=provider.message_one,
        message_many=provider.message_many,
        known_hosts=provider.known_hosts_ref,
    )


def target_config(
    target: GitTargetView, provider: GitProviderView, cluster: ClusterProviderView | None = None
) -> TargetConfig:
    """A served GitTarget's settings for the branch worker; ``cluster`` its ClusterProvider
    (its ``spec.attribution`` turns attribution on for the GitTarget's commits)."""
    attribution = cluster.attribution if cluster is not None else None
    return TargetConfig(
        uid=target.uid,
        namespace=target.meta.namespace,
        name=target.meta.name,
        url=provider.url,
        branch=target.branch,
        writer=branch_config(provider, target.branch).writer,
        path=target.path,
        prune=target.prune,
        on_refusal=target.on_refusal,
        applier=target.applier,
        quiet_period_s=target.quiet_period_s,
        webhook=target.webhook,
        signing_secret=target.signing.secret_name if target.signing else "",
        recipients=target.encryption.recipients if target.encryption is not None else (),
        audit_route=attribution.audit_route if attribution is not None else "",
        placement=target.placement,
        commit_window_s=target.commit.window_s,
        live_template=target.commit.live_template,
        reconcile_template=target.commit.reconcile_template,
        suspended=target.controls.suspended,
    )


def branch_configs(
    served: Iterable[tuple[GitTargetView, GitProviderView]],
) -> dict[BranchKey, BranchConfig]:
    """One config per branch, from the GitProviders of its served GitTargets (those of one
    branch all have its writer, ``_hold_branches``), the first by namespace and name."""
    chosen: dict[BranchKey, BranchConfig] = {}
    for target, provider in sorted(served, key=lambda p: (p[1].meta.namespace, p[1].meta.name)):
        config = branch_config(provider, target.branch)
        chosen.setdefault(config.ref.key, config)
    return chosen
