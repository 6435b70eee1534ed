"""Label selectors and ClusterProvider admission (``spec.accessFrom``).

A ClusterProvider decides which GitTarget namespaces may read through it. The three shapes
mean different things and must never be confused: ``accessFrom`` absent admits nothing,
``selector: {}`` admits every namespace, and ``names``/``selector`` admit what they name or
match (either is enough).

A ClusterProvider also decides which appliers in its cluster may serve a GitTarget of another
namespace (T2, ``spec.crossNamespaceAppliers``): none unless an entry names the applier's
namespace and its ``accessFrom`` admits the GitTarget's, with the same three shapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from shared.model.crd_meta import LabelSelector, Requirement
from shared.model.crds import AccessFrom, ApplierAllowance


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


def allows_applier(
    allowances: Iterable[ApplierAllowance],
    applier_namespace: str,
    namespace: str,
    labels: Mapping[str, str],
) -> bool:
    """T2: may an applier in ``applier_namespace`` serve a GitTarget in ``namespace``?

    Its own namespace always; another only when an allowance names the applier's namespace
    and admits the GitTarget's (``labels`` are the GitTarget namespace's).
    """
    if applier_namespace == namespace:
        return True
    return any(
        a.namespace == applier_namespace and admits(a.access_from, namespace, labels)
        for a in allowances
    )


def selects(selectors: tuple[LabelSelector, ...] | None, labels: Mapping[str, str]) -> bool:
    """A watch's objectSelectors (issue 27): None selects every object, else any one that
    matches does (the rules merged into one watch each select what they match)."""
    return selectors is None or any(selector_matches(s, labels) for s in selectors)


def selection_key(selectors: tuple[LabelSelector, ...] | None) -> str:
    """A watch's objectSelectors as one comparable string ("" when it selects every object):
    a watch whose seen set was listed under another one lists again."""
    if selectors is None:
        return ""
    return json.dumps(
        sorted(
            [
                list(s.match_labels),
                [[r.key, r.operator, list(r.values)] for r in s.match_expressions],
            ]
            for s in selectors
        ),
        separators=(",", ":"),
    )


def selectors_from_key(text: str) -> tuple[LabelSelector, ...] | None:
    """The inverse of ``selection_key`` (the dispatcher's D3 check lists what a watch
    selects); "" is None, every object."""
    if not text:
        return None
    return tuple(
        LabelSelector(
            tuple((str(k), str(v)) for k, v in labels),
            tuple(Requirement(str(k), str(op), tuple(str(v) for v in vs)) for k, op, vs in reqs),
        )
        for labels, reqs in json.loads(text)
    )
