"""Branch and GitTarget settings as the watcher would publish them for bare custom resources.

The records take every CRD-defaulted field as a required argument (the defaults live once, in
``shared.model.defaults``); tests that only care about a URL or a path build them here, with the
values a GitProvider or GitTarget that sets nothing else would give.
"""

from __future__ import annotations

from shared.git.workspace import Committer
from shared.model import defaults
from shared.model.config import ApplierRef, BranchConfig, OnRefusal, PruneMode, TargetConfig
from shared.model.ids import GitTargetUid

#: The committer of a GitProvider that names none.
DEFAULT_COMMITTER = Committer(defaults.COMMITTER_NAME, defaults.COMMITTER_EMAIL)


def branch_config(
    url: str,
    branch: str = "main",
    provider_namespace: str = "team",
    provider_name: str = "gp",
    secret_name: str = "",
    *,
    commit_window_s: float = defaults.COMMIT_WINDOW_S,
    known_hosts: str = "",
) -> BranchConfig:
    """A branch written by a GitProvider with only its URL (and maybe its Secret and its
    knownHostsRef, as ``Kind/name``) set."""
    return BranchConfig(
        url=url,
        branch=branch,
        provider_namespace=provider_namespace,
        provider_name=provider_name,
        secret_name=secret_name,
        commit_window_s=commit_window_s,
        committer_name=defaults.COMMITTER_NAME,
        committer_email=defaults.COMMITTER_EMAIL,
        message_one=defaults.EVENT_TEMPLATE,
        message_many=defaults.GROUP_TEMPLATE,
        known_hosts=known_hosts,
    )


def target_config(
    uid: GitTargetUid,
    namespace: str,
    name: str,
    url: str,
    branch: str,
    *,
    path: str,
    prune: PruneMode = defaults.PRUNE_MODE,
    on_refusal: OnRefusal = defaults.ON_REFUSAL,
    applier: ApplierRef | None = None,
    quiet_period_s: float = defaults.QUIET_PERIOD_S,
    writer: str = "",
) -> TargetConfig:
    """A GitTarget incarnation with only its folder (and maybe its applier) set."""
    return TargetConfig(
        uid=uid,
        namespace=namespace,
        name=name,
        url=url,
        branch=branch,
        path=path,
        prune=prune,
        on_refusal=on_refusal,
        applier=applier,
        quiet_period_s=quiet_period_s,
        writer=writer,
    )
