"""What every custom resource of the product shares, parsed once from the API's JSON: its
identity (``Meta``), its ``status.conditions``, and the label selectors and ``accessFrom`` a
ClusterProvider admits namespaces with. The views of the resources themselves are
``crds.py``'s (and ``crd_rules.py``'s, for the watch rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``status.conditions`` entry (the metav1.Condition shape)."""

    type: str
    status: str  # "True", "False" or "Unknown"
    reason: str
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int = 0

    def to_raw(self) -> dict[str, Any]:
        """The entry as the API stores it."""
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
            "observedGeneration": self.observed_generation,
        }


@dataclass(frozen=True, slots=True)
class Meta:
    """The identity and versions of one object."""

    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry of a label selector."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A standard label selector; an empty one matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class AccessFrom:
    """Which GitTarget namespaces a ClusterProvider admits (names, or a selector, or both)."""

    names: tuple[str, ...] = ()
    selector: LabelSelector | None = None


def as_map(value: Any) -> Raw:
    """``value`` when it is an object, else an empty one."""
    return cast(Raw, value) if isinstance(value, Mapping) else {}


def strings(value: Any) -> tuple[str, ...]:
    """A list of strings, or none when ``value`` is not a list."""
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """An object's entries as sorted (key, value) string pairs."""
    return tuple(sorted((str(k), str(v)) for k, v in as_map(value).items()))


def parse_meta(raw: Raw) -> Meta:
    """The identity of any object."""
    meta = as_map(raw.get("metadata"))
    return Meta(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        resource_version=str(meta.get("resourceVersion", "")),
        labels=pairs(meta.get("labels")),
    )


def parse_conditions(raw: Raw) -> tuple[Condition, ...]:
    """``status.conditions`` as records (entries without a type are skipped)."""
    entries = as_map(raw.get("status")).get("conditions")
    if not isinstance(entries, list):
        return ()
    return tuple(
        Condition(
            type=str(e["type"]),
            status=str(e.get("status", "Unknown")),
            reason=str(e.get("reason", "")),
            message=str(e.get("message", "")),
            last_transition_time=str(e.get("lastTransitionTime", "")),
            observed_generation=int(e.get("observedGeneration") or 0),
        )
        for e in entries
        if isinstance(e, Mapping) and e.get("type")
    )


def parse_selector(raw: Any) -> LabelSelector:
    """A label selector (``matchLabels`` and ``matchExpressions``)."""
    selector = as_map(raw)
    expressions = tuple(
        Requirement(str(e.get("key", "")), str(e.get("operator", "")), strings(e.get("values")))
        for e in selector.get("matchExpressions") or []
        if isinstance(e, Mapping)
    )
    return LabelSelector(pairs(selector.get("matchLabels")), expressions)


def parse_access_from(raw: Any) -> AccessFrom | None:
    """An ``accessFrom`` (names and a selector); absent or not an object is None (admits
    nothing), an empty object admits nothing either, ``selector: {}`` every namespace."""
    if not isinstance(raw, Mapping):
        return None
    selector = raw.get("selector")
    return AccessFrom(
        names=strings(raw.get("names")),
        selector=parse_selector(selector) if isinstance(selector, Mapping) else None,
    )
