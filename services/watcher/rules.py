"""WatchRules: Ready when their GitTarget exists and every resource they name resolves.

A WatchRule's resources are resolved against the discovery of its GitTarget's cluster; a
name that matches no namespaced, watchable type there stalls it with
``UnresolvedResources``. A cluster that cannot be read yet keeps it Reconciling.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.watcher.clusters import ClusterState
from services.watcher.status import StatusPublisher
from shared.decide.conditions import Problem, trio
from shared.decide.targets import CLUSTER_PROVIDER_NOT_FOUND, NOT_ADMITTED, Verdict
from shared.decide.watches import rule_problems
from shared.kube.kinds import WATCH_RULES
from shared.model.crds import GitTargetView, WatchRuleView

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
        status.publish(WATCH_RULES, rule.meta, rule.conditions, trio(problems))
