"""The fields upstream added in 0.42 to 0.50 (issue 27), for ``convert``.

Every one is in our CRDs now (``spec.suspend``, ``spec.onRefusal: PushEmptyCommit``,
``spec.placement`` with ``spec.serializeNamespace``, the GitTarget's ``spec.commit`` window and
templates, ``rules[].objectSelector``), so each is mapped; what ours still cannot say (a
placement variable ours lacks, ``serializeNamespace: false`` outside a kustomize root) is
refused by field. docs/migrating.md has the table.
"""

from __future__ import annotations

import re
from typing import Any

from services.cli.upstream_fields import Fields, Refusal, put

#: Upstream placement variables and ours (None: ours has no equivalent).
_VARIABLES: dict[str, str | None] = {
    "name": "name",
    "namespace": "namespace",
    "resource": "resource",
    "group": "group",
    "version": "version",
    "namespaceOrCluster": "namespace|_cluster",
    "kind": None,
    "apiVersion": None,
    "groupPath": None,
    "scope": None,
    "sensitiveSuffix": None,
}
_TEMPLATE_VARIABLE = re.compile(r"\{([A-Za-z]+)(?::([^}|]*))?(\|[^}]*)?\}")


def suspend(spec: Fields, out: dict[str, Any]) -> None:
    """``spec.suspend``: the same field, the same meaning (writes stop, the watch keeps
    collecting, resuming writes what was edited meanwhile)."""
    put(out, "suspend", spec.take("suspend"))


def on_refusal(spec: Fields, out: dict[str, Any]) -> None:
    """Upstream's ``Ignore`` is ours' default ``None`` (left absent); ``PushEmptyCommit`` is
    ours' too (a converted GitTarget has no ``spec.applier``, which ours' CEL requires of it)."""
    value = spec.take("onRefusal")
    if value == "PushEmptyCommit":
        out["onRefusal"] = "PushEmptyCommit"
    elif value not in (None, "Ignore"):
        raise Refusal(spec.at("onRefusal"), f"must be Ignore or PushEmptyCommit: {value!r}")


def template(text: Any, path: str) -> str:
    """An upstream placement template in ours' variables."""
    if not isinstance(text, str):
        raise Refusal(path, "must be a string")

    def one(match: re.Match[str]) -> str:
        name, label, fallback = match.group(1), match.group(2), match.group(3) or ""
        if name == "label" and label is not None:
            return "{label:" + label + fallback + "}"
        ours = _VARIABLES.get(name)
        if ours is None:
            raise Refusal(path, f"{{{name}}} has no equivalent in ours' placement templates")
        if "|" in ours and fallback:
            raise Refusal(path, f"{{{name}{fallback}}} has no equivalent")
        return "{" + ours + fallback + "}"

    return _TEMPLATE_VARIABLE.sub(one, text)


def type_key(key: str, path: str) -> str:
    """Upstream's ``[group/]version/resource`` as ours' ``group/resource`` (``resource`` for
    the core group): ours places every version of a type alike, as upstream's files do."""
    parts = key.split("/")
    if len(parts) == 3:
        return f"{parts[0]}/{parts[2]}"
    if len(parts) == 2:
        return parts[1]
    raise Refusal(path, f"key {key!r} is not [group/]version/resource")


def placement(spec: Fields, out: dict[str, Any]) -> None:
    if spec.has("placement"):
        src = spec.sub("placement")
        ours: dict[str, Any] = {}
        if src.has("default"):
            ours["default"] = template(src.take("default"), src.at("default"))
        if src.has("byType"):
            by_type: dict[str, str] = {}
            for key, text in (src.take("byType") or {}).items():
                path = f"{src.at('byType')}[{key}]"
                mapped, converted = type_key(str(key), path), template(text, path)
                if by_type.get(mapped, converted) != converted:
                    raise Refusal(path, f"two versions of {mapped} have different templates")
                by_type[mapped] = converted
            ours["byType"] = by_type
        put(ours, "useKustomize", src.take("useKustomize"))
        src.rest()
        out["placement"] = ours
    if spec.has("serializeNamespace"):
        serialize = spec.take("serializeNamespace")
        if not isinstance(serialize, bool):
            raise Refusal(spec.at("serializeNamespace"), f"must be true or false: {serialize!r}")
        if serialize is False and out.get("placement", {}).get("useKustomize") is not True:
            raise Refusal(
                spec.at("serializeNamespace"),
                "false needs spec.placement.useKustomize: true in ours (the root "
                "kustomization.yaml's namespace says what the files leave out); add it, or "
                "remove serializeNamespace",
            )
        out["serializeNamespace"] = serialize


def commit(spec: Fields, out: dict[str, Any]) -> None:
    if spec.has("commit"):
        src = spec.sub("commit")
        ours: dict[str, Any] = {}
        put(ours, "window", src.take("window"))
        message = src.sub("message")
        templates = {
            k: message.take(k) for k in ("liveTemplate", "reconcileTemplate") if message.has(k)
        }
        message.rest()
        put(ours, "message", templates or None)
        src.rest()
        out["commit"] = ours


def object_selector(rule: Fields, out: dict[str, Any]) -> None:
    if rule.has("objectSelector"):
        selector = rule.sub("objectSelector")
        ours: dict[str, Any] = {}
        put(ours, "matchLabels", selector.take("matchLabels"))
        put(ours, "matchExpressions", selector.take("matchExpressions"))
        selector.rest()
        out["objectSelector"] = ours
