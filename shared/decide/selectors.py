"""Label selectors and ClusterProvider admission (``spec.accessFrom``).

A ClusterProvider decides which GitTarget namespaces may read through it. The three shapes
mean different things and must never be confused: ``accessFrom`` absent admits nothing,
``selector: {}`` admits every namespace, and ``names``/``selector`` admit what they name or
match (either is enough).
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.model.crds import AccessFrom, LabelSelector, Requirement


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` entry, as apimachinery's labels.Requirement evaluates it."""
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    return False  # an unknown operator selects nothing


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Every matchLabels pair and every expression hold (an empty selector matches all)."""
    if any(labels.get(key) != value for key, value in selector.match_labels):
        return False
    return all(requirement_matches(req, labels) for req in selector.match_expressions)


def admits(access: AccessFrom | None, namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether a ClusterProvider with ``access`` admits a GitTarget in ``namespace``."""
    if access is None:
        return False
    if namespace in access.names:
        return True
    return access.selector is not None and selector_matches(access.selector, labels)
