"""WatchRules and ClusterWatchRules: Ready when their GitTarget exists (and, for a
ClusterWatchRule, its ClusterProvider lets it receive cluster-scoped objects) and every
resource they name resolves.

A WatchRule's resources are resolved against the discovery of its GitTarget's cluster; a
name that matches no namespaced, watchable type there stalls it with
``UnresolvedResources`` (a ClusterWatchRule: no cluster-scoped one). A cluster that cannot be
read yet keeps it Reconciling. A ClusterWatchRule its GitTarget's ClusterProvider does not
admit stalls with ``GitTargetNamespaceNotAuthorized`` or ``ClusterScopeNotAdmitted``
(``shared.decide.cluster_rules``).
"""

from __future__ import annotations

from collections.abc import Mapping

from services.watcher.clusters import ClusterState
from services.watcher.status import StatusPublisher
from shared.decide.cluster_rules import Sources, cluster_rule_problems
from shared.decide.conditions import Problem, trio
from shared.decide.targets import CLUSTER_PROVIDER_NOT_FOUND, NOT_ADMITTED, Verdict
from shared.decide.watches import rule_problems
from shared.kube.kinds import CLUSTER_WATCH_RULES, WATCH_RULES
from shared.model.crds import (
    ClusterWatchRuleView,
    GitTargetView,
    RuleView,
    WatchRuleView,
)

#: Target verdicts that leave a WatchRule without a cluster to resolve against.
_CLUSTER_REASONS = frozenset({CLUSTER_PROVIDER_NOT_FOUND, NOT_ADMITTED})


def _cluster_problem(
    target: GitTargetView, verdict: Verdict, states: Mapping[str, ClusterState]
) -> Problem | None:
    if verdict.reason in _CLUSTER_REASONS:
        return Problem(verdict.reason, verdict.message)
    state = states.get(target.cluster_provider)
    return state.problem if state else None


def reconcile_rules(
    rules: list[WatchRuleView],
    targets: Mapping[tuple[str, str], tuple[GitTargetView, Verdict]],
    states: Mapping[str, ClusterState],
    status: StatusPublisher,
) -> None:
    """Write every WatchRule's conditions when they changed."""
    for rule in rules:
        found = targets.get((rule.meta.namespace, rule.target))
        problems: list[Problem]
        if found is None:
            problems = rule_problems(rule, None, None, None)
        else:
            target, verdict = found
            state = states.get(target.cluster_provider)
            problem = _cluster_problem(target, verdict, states)
            problems = rule_problems(rule, target, problem, state.catalog if state else None)
        wanted = trio(problems, ready_message=selects(rule.rules, f"GitTarget {rule.target}"))
        status.publish(WATCH_RULES, rule.meta, rule.conditions, wanted)


def selects(rules: tuple[RuleView, ...], target: str) -> str:
    """What a Ready rule says it does (issue 26: never an empty Ready message)."""
    names = sorted({name for entry in rules for name in entry.resources})
    return f"mirrors {', '.join(names) or 'nothing'} into {target}"


def reconcile_cluster_rules(
    rules: list[ClusterWatchRuleView],
    targets: Mapping[tuple[str, str], tuple[GitTargetView, Verdict]],
    sources: Sources,
    states: Mapping[str, ClusterState],
    status: StatusPublisher,
) -> None:
    """Write every ClusterWatchRule's conditions when they changed."""
    for rule in rules:
        found = targets.get((rule.target_namespace, rule.target))
        target, verdict = found if found is not None else (None, None)
        refused = sources.admission(rule, target, verdict)
        state = states.get(target.cluster_provider) if target is not None else None
        problem = state.problem if state else None
        catalog = state.catalog if state else None
        problems = cluster_rule_problems(rule, refused, problem, catalog)
        where = f"GitTarget {rule.target_namespace}/{rule.target}"
        wanted = trio(problems, ready_message=selects(rule.rules, where))
        status.publish(CLUSTER_WATCH_RULES, rule.meta, rule.conditions, wanted)
