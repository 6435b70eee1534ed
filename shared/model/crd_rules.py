"""Typed views of the WatchRule and ClusterWatchRule custom resources (which objects a
GitTarget mirrors), parsed once from the API's JSON (see ``crds.py`` for the others).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.model.crd_meta import (
    Condition,
    Meta,
    Raw,
    as_map,
    parse_conditions,
    parse_meta,
    strings,
)
from shared.model.events import OPERATIONS, Operation
from shared.model.rule_fields import RuleFields, parse_rule_fields


@dataclass(frozen=True, slots=True)
class RuleView:
    """One ``spec.rules[]`` entry; ``api_versions`` empty means each group's preferred."""

    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    operations: frozenset[Operation]
    #: objectSelector and ignoreDifferences (issue 27; ``shared.model.rule_fields``).
    fields: RuleFields = field(default_factory=RuleFields)


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


def _operations(value: Any) -> frozenset[Operation]:
    named = strings(value)
    if not named or "*" in named:
        return frozenset(OPERATIONS)
    return frozenset(op for op in OPERATIONS if op in named)


def parse_watch_rule(raw: Raw) -> WatchRuleView:
    """A WatchRule."""
    spec = as_map(raw.get("spec"))
    target = str(as_map(spec.get("targetRef")).get("name", ""))
    return WatchRuleView(parse_meta(raw), target, _rules(spec), parse_conditions(raw))


def parse_cluster_watch_rule(raw: Raw) -> ClusterWatchRuleView:
    """A ClusterWatchRule."""
    spec = as_map(raw.get("spec"))
    ref = as_map(spec.get("targetRef"))
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
            api_groups=strings(r.get("apiGroups")),
            api_versions=strings(r.get("apiVersions")),
            resources=strings(r.get("resources")),
            operations=_operations(r.get("operations")),
            fields=parse_rule_fields(r),
        )
        for r in spec.get("rules") or []
        if isinstance(r, Mapping)
    )
