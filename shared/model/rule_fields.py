"""The per-rule fields of a (Cluster)WatchRule beyond the resource names (issue 27).

``rules[].objectSelector`` narrows a rule to the objects whose labels match (the Go operator's
field of 0.50, its limits: at most 64 ``matchLabels`` and 32 ``matchExpressions``, operators
In, NotIn, Exists, DoesNotExist). ``rules[].ignoreDifferences`` (Argo CD's shape: entries of
``jsonPointers`` and ``managedFieldsManagers``) names fields whose value in Git is kept whatever
the API says. Both are parsed once here, and checked again the way the CRD's CEL rules check
them (an object stored before a rule existed, or written where the CRD is not installed, still
fails only its own WatchRule, with the message the parser gives).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from shared.model.crd_meta import LabelSelector, Requirement

#: The Go operator's limits on a rule's objectSelector (facts/upstream-0.50.md).
MAX_MATCH_LABELS = 64
MAX_MATCH_EXPRESSIONS = 32
#: Values of one In/NotIn expression (ours: a list longer than this is a list of names, which
#: a label on the objects says better).
MAX_VALUES = 64
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
#: Pointers and managers of one rule's ignoreDifferences, over all its entries (ours: each is
#: applied to every event of the rule's objects).
MAX_POINTERS = 32
MAX_MANAGERS = 16
#: Fields that say which object a document is: ignoring them would make a document of
#: another object, so a pointer into them is refused.
IDENTITY_POINTERS = ("/apiVersion", "/kind", "/metadata/name", "/metadata/namespace")


@dataclass(frozen=True, slots=True)
class IgnoreDifferences:
    """Fields whose value in Git wins: by JSON pointer, and those a field manager owns."""

    json_pointers: tuple[str, ...] = ()
    managers: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.json_pointers or self.managers)

    def merged(self, other: IgnoreDifferences) -> IgnoreDifferences:
        """Both sets (rules that select one type ignore what either ignores)."""
        return IgnoreDifferences(
            tuple(sorted({*self.json_pointers, *other.json_pointers})),
            tuple(sorted({*self.managers, *other.managers})),
        )


@dataclass(frozen=True, slots=True)
class RuleFields:
    """A rule's selector (None: every object), what it ignores, and why it cannot be used."""

    selector: LabelSelector | None = None
    ignore: IgnoreDifferences = field(default_factory=IgnoreDifferences)
    problem: str = ""


def _map(value: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def parse_object_selector(raw: Any) -> tuple[LabelSelector | None, str]:
    """``objectSelector`` as a selector (absent: None) and why it cannot be used ("": it can)."""
    if raw is None:
        return None, ""
    selector = _map(raw)
    labels = _map(selector.get("matchLabels"))
    expressions = _list(selector.get("matchExpressions"))
    if len(labels) > MAX_MATCH_LABELS:
        return None, f"objectSelector.matchLabels has more than {MAX_MATCH_LABELS} entries"
    if len(expressions) > MAX_MATCH_EXPRESSIONS:
        return None, f"objectSelector.matchExpressions has more than {MAX_MATCH_EXPRESSIONS}"
    requirements: list[Requirement] = []
    for index, entry in enumerate(expressions):
        req, problem = _requirement(_map(entry))
        if problem:
            return None, f"objectSelector.matchExpressions[{index}]: {problem}"
        requirements.append(req)
    pairs = tuple(sorted((str(k), str(v)) for k, v in labels.items()))
    return LabelSelector(pairs, tuple(requirements)), ""


def _requirement(entry: Mapping[str, Any]) -> tuple[Requirement, str]:
    key = str(entry.get("key") or "")
    operator = str(entry.get("operator") or "")
    values = tuple(str(v) for v in _list(entry.get("values")))
    req = Requirement(key, operator, values)
    if not key:
        return req, "key is empty"
    if operator not in OPERATORS:
        return req, f"operator {operator!r} is not one of {', '.join(OPERATORS)}"
    if operator in ("In", "NotIn") and not values:
        return req, f"{operator} needs at least one value"
    if operator in ("Exists", "DoesNotExist") and values:
        return req, f"{operator} takes no values"
    if len(values) > MAX_VALUES:
        return req, f"more than {MAX_VALUES} values"
    return req, ""


def parse_ignore_differences(raw: Any) -> tuple[IgnoreDifferences, str]:
    """``ignoreDifferences`` entries merged into one record, and why it cannot be used."""
    pointers: set[str] = set()
    managers: set[str] = set()
    for index, entry in enumerate(_list(raw)):
        found = _map(entry)
        listed = [str(p) for p in _list(found.get("jsonPointers"))]
        named = [str(m) for m in _list(found.get("managedFieldsManagers"))]
        if not listed and not named:
            return IgnoreDifferences(), (
                f"ignoreDifferences[{index}] names no jsonPointers and no managedFieldsManagers"
            )
        for pointer in listed:
            problem = pointer_problem(pointer)
            if problem:
                return IgnoreDifferences(), f"ignoreDifferences[{index}]: {problem}"
        if any(not m for m in named):
            return IgnoreDifferences(), f"ignoreDifferences[{index}]: an empty manager name"
        pointers.update(listed)
        managers.update(named)
    if len(pointers) > MAX_POINTERS or len(managers) > MAX_MANAGERS:
        return IgnoreDifferences(), (
            f"ignoreDifferences names more than {MAX_POINTERS} jsonPointers "
            f"or {MAX_MANAGERS} managedFieldsManagers"
        )
    return IgnoreDifferences(tuple(sorted(pointers)), tuple(sorted(managers))), ""


def pointer_problem(pointer: str) -> str:
    """Why ``pointer`` cannot be ignored ("": it can): RFC 6901 syntax, not the identity."""
    if not pointer.startswith("/") or pointer == "/":
        return f"jsonPointer {pointer!r} must start with / and name a field"
    if any(
        pointer == p or pointer.startswith(p + "/") or p.startswith(pointer + "/")
        for p in IDENTITY_POINTERS
    ):
        return f"jsonPointer {pointer!r} names the object's identity, which is never ignored"
    tokens = pointer.split("/")[1:]
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            return f"jsonPointer {pointer!r} has a ~ that is neither ~0 nor ~1"
    return ""


def parse_rule_fields(rule: Mapping[str, Any]) -> RuleFields:
    """The selector and ignored differences of one ``spec.rules[]`` entry."""
    selector, problem = parse_object_selector(rule.get("objectSelector"))
    ignore, ignore_problem = parse_ignore_differences(rule.get("ignoreDifferences"))
    return RuleFields(selector, ignore, problem or ignore_problem)
