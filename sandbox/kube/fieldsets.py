"""Field sets of Kubernetes objects, in the FieldsV1 form ``metadata.managedFields`` stores.

Why it exists: ownership (who set which field) is a set of paths, and both an Update's record
and a server-side apply are set algebra over those paths. This module turns objects into path
sets the way sigs.k8s.io/structured-merge-diff does, without a full OpenAPI schema:

- a path is a tuple of FieldsV1 keys: ``f:<field>``, ``k:<json of the item's key fields>``
  for an item of an associative list, ``v:<json>`` for an item of a set, ``i:<n>`` unused;
  a member path with children is written with a ``"."`` entry (``fieldpath`` serialize.go);
- ``apply_set`` is ``TypedValue.ToFieldSet``: leaves, list items and map entries are members,
  struct fields are members only when null or ``{}``; ``compare`` is ``TypedValue.Compare``:
  a new subtree is added as a whole (so a created sub-map gets its ``"."``);
- the schema is a small table per built-in kind (``Schema``): associative lists and their
  keys (from the ``+listType=map``/``+listMapKey`` or ``patchMergeKey`` tags of k8s.io/api
  types.go, e.g. container ports keyed by containerPort and protocol), sets (finalizers),
  atomic structs (``+structType=atomic``: OwnerReference, RoleRef, Deployment's
  LabelSelector), and string maps (labels, annotations, data...). Everything else is
  simplified: an unlisted list is atomic, an unlisted object is a struct. Custom resources get
  no table, so their lists are atomic whatever the CRD says.
- ``STRIPPED`` are the paths ``stripMetaManager`` never records, plus the two deletion fields.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.kube.patcherrors import json_equal

Path = tuple[str, ...]
_ABSENT: Any = object()
#: Defaults of key fields that may be omitted (ContainerPort/ServicePort protocol is "TCP").
_KEY_DEFAULTS = {"protocol": "TCP"}
#: Fields that are ``map[string]...`` wherever they appear: their keys are members.
_STRING_MAPS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "limits",
        "requests",
        "matchLabels",
    }
)

STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", f"f:{name}")
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        )
    }
)


@dataclass(frozen=True, slots=True)
class Schema:
    """What the sandbox knows of a kind's shape; patterns are ``spec.a[].b`` style."""

    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sets: frozenset[str] = frozenset()
    atomic: frozenset[str] = frozenset()
    maps: frozenset[str] = frozenset()

    def is_map(self, pattern: str) -> bool:
        """True when the object at ``pattern`` is a string map, not a struct."""
        return pattern in self.maps or pattern.rsplit(".", 1)[-1] in _STRING_MAPS


def _pod_keys(prefix: str) -> dict[str, tuple[str, ...]]:
    keys: dict[str, tuple[str, ...]] = {
        f"{prefix}.{f}": ("name",)
        for f in ("volumes", "initContainers", "containers", "imagePullSecrets")
    }
    keys[f"{prefix}.hostAliases"] = ("ip",)
    for containers in ("initContainers", "containers"):
        keys[f"{prefix}.{containers}[].env"] = ("name",)
        keys[f"{prefix}.{containers}[].volumeMounts"] = ("mountPath",)
        keys[f"{prefix}.{containers}[].ports"] = ("containerPort", "protocol")
    return keys


_META = Schema(
    keys={"metadata.ownerReferences": ("uid",)},
    sets=frozenset({"metadata.finalizers"}),
    atomic=frozenset({"metadata.ownerReferences[]"}),
)
_KINDS: dict[tuple[str, str], Schema] = {
    ("apps", "Deployment"): Schema(
        keys={**_pod_keys("spec.template.spec"), "status.conditions": ("type",)},
        atomic=frozenset({"spec.selector"}),
    ),
    ("", "Service"): Schema(
        keys={"spec.ports": ("port", "protocol")}, maps=frozenset({"spec.selector"})
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): Schema(atomic=frozenset({"roleRef"})),
}
#: API groups whose objects are typed Go structs: a new object starts from the zero struct.
_TYPED_GROUPS = frozenset(
    {
        "",
        "apps",
        "rbac.authorization.k8s.io",
        "events.k8s.io",
        "authorization.k8s.io",
        "coordination.k8s.io",
    }
)
#: Non-pointer structs (and null non-omitempty fields) of those zero structs.
_ZERO_STRUCTS: dict[tuple[str, str], dict[str, Any]] = {
    ("apps", "Deployment"): {
        "spec": {
            "selector": None,
            "strategy": {},
            "template": {"metadata": {}, "spec": {"containers": None}},
        },
        "status": {},
    },
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "Event"): {"involvedObject": {}, "source": {}},
    ("rbac.authorization.k8s.io", "Role"): {"rules": None},
}


def _group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    return group, str(obj.get("kind", ""))


def schema_for(obj: Mapping[str, Any]) -> Schema:
    """The table for ``obj``'s kind, with the metadata rules every kind shares."""
    kind = _KINDS.get(_group_kind(obj), Schema())
    return Schema(
        keys={**_META.keys, **kind.keys},
        sets=_META.sets | kind.sets,
        atomic=_META.atomic | kind.atomic,
        maps=kind.maps,
    )


def empty_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a create is compared against: the kind's zero struct, or ``{}`` for a CR."""
    group, kind = _group_kind(obj)
    if group not in _TYPED_GROUPS:
        return {}
    return {"metadata": {}, **copy.deepcopy(_ZERO_STRUCTS.get((group, kind), {}))}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _item_element(item: Any, pattern: str, schema: Schema) -> str | None:
    key_fields = schema.keys.get(pattern)
    if key_fields:
        if not isinstance(item, dict):
            return None
        key = {k: item.get(k, _KEY_DEFAULTS.get(k, _ABSENT)) for k in key_fields}
        return None if _ABSENT in key.values() else "k:" + _json(key)
    return "v:" + _json(item) if pattern in schema.sets else None


def _elements(items: list[Any], pattern: str, schema: Schema) -> list[str] | None:
    """Path elements of a list's items, or None when the list is treated as atomic."""
    elements = [_item_element(item, pattern, schema) for item in items]
    if None in elements or len(set(elements)) != len(elements):
        return None
    return [e for e in elements if e is not None]


def _child_pattern(pattern: str, name: str) -> str:
    return f"{pattern}.{name}" if pattern else name


def _shape(value: Any, pattern: str, schema: Schema) -> str:
    if pattern in schema.atomic:
        return "leaf"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list) and _elements(value, pattern, schema) is not None:
        return "list"
    return "leaf"


def _children(value: Any, path: Path, pattern: str, schema: Schema) -> list[tuple[Path, str, Any]]:
    """(path, pattern, value) of each child of a map or a keyed list, in order."""
    if _shape(value, pattern, schema) == "map":
        return [((*path, f"f:{k}"), _child_pattern(pattern, k), v) for k, v in value.items()]
    if _shape(value, pattern, schema) == "list":
        elements = _elements(value, pattern, schema) or []
        return [((*path, e), pattern + "[]", v) for e, v in zip(elements, value, strict=True)]
    return []


# ---- ToFieldSet ---------------------------------------------------------------------------


def apply_set(obj: Mapping[str, Any], schema: Schema) -> set[Path]:
    """The fields an apply configuration sets (``ToFieldSet``), stripped paths excluded."""
    out: set[Path] = set()
    _apply_walk(obj, (), "", schema, out=out, member=False)
    return out - STRIPPED - {()}


def _apply_walk(
    value: Any, path: Path, pattern: str, schema: Schema, *, out: set[Path], member: bool
) -> None:
    shape = _shape(value, pattern, schema)
    if shape == "leaf" or member or (shape == "map" and not value):
        out.add(path)
    in_map = shape == "map" and schema.is_map(pattern)
    for child_path, child_pattern, child in _children(value, path, pattern, schema):
        _apply_walk(
            child, child_path, child_pattern, schema, out=out, member=shape == "list" or in_map
        )


# ---- Compare ------------------------------------------------------------------------------


@dataclass(slots=True)
class Diff:
    """Paths a write added, modified and removed (``typed.Comparison``)."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)


def compare(old: Mapping[str, Any], new: Mapping[str, Any], schema: Schema) -> Diff:
    """What changed from ``old`` to ``new``; a new or dropped subtree counts as a whole."""
    diff = Diff()
    _compare(dict(old), dict(new), (), "", schema, diff=diff)
    return diff


def _subtree(value: Any, path: Path, pattern: str, schema: Schema, into: set[Path]) -> None:
    for child_path, child_pattern, child in _children(value, path, pattern, schema):
        into.add(child_path)
        _subtree(child, child_path, child_pattern, schema, into)


def _compare(old: Any, new: Any, path: Path, pattern: str, schema: Schema, *, diff: Diff) -> None:
    if old is _ABSENT or new is _ABSENT:
        into, value = (diff.added, new) if old is _ABSENT else (diff.removed, old)
        into.add(path)
        _subtree(value, path, pattern, schema, into)
        return
    shapes = (_shape(old, pattern, schema), _shape(new, pattern, schema))
    if old is None and shapes[1] != "leaf":  # null is an empty map or list of the same type
        old, shapes = type(new)(), (shapes[1], shapes[1])
    elif new is None and shapes[0] != "leaf":
        new, shapes = type(old)(), (shapes[0], shapes[0])
    if shapes[0] != shapes[1] or shapes[0] == "leaf":
        if not json_equal(old, new):
            diff.modified.add(path)
        if shapes[0] != shapes[1]:
            _subtree(old, path, pattern, schema, diff.removed)
            _subtree(new, path, pattern, schema, diff.added)
        return
    before = {p: (pat, v) for p, pat, v in _children(old, path, pattern, schema)}
    after = {p: (pat, v) for p, pat, v in _children(new, path, pattern, schema)}
    for child in list(after) + [p for p in before if p not in after]:
        child_pattern = (after.get(child) or before[child])[0]
        _compare(
            before.get(child, (None, _ABSENT))[1],
            after.get(child, (None, _ABSENT))[1],
            child,
            child_pattern,
            schema,
            diff=diff,
        )


# ---- merge and remove ---------------------------------------------------------------------


def merge(live: Any, config: Any, schema: Schema, pattern: str = "") -> Any:
    """``config`` merged into ``live`` (``TypedValue.Merge``); keyed list items keep order."""
    if _shape(live, pattern, schema) == "map" and _shape(config, pattern, schema) == "map":
        merged = dict(live)
        for key, value in config.items():
            child = _child_pattern(pattern, key)
            merged[key] = merge(live.get(key, _ABSENT), value, schema, child)
        return merged
    if _shape(live, pattern, schema) == "list" and _shape(config, pattern, schema) == "list":
        wanted = dict(zip(_elements(config, pattern, schema) or [], config, strict=True))
        result = [
            merge(item, wanted.pop(e), schema, pattern + "[]") if e in wanted else item
            for e, item in zip(_elements(live, pattern, schema) or [], live, strict=True)
        ]
        return result + list(wanted.values())
    return copy.deepcopy(config)


def _matches(item: Any, element: str, index: int) -> bool:
    kind, body = element[:2], element[2:]
    if kind == "k:":
        wanted = json.loads(body)
        return isinstance(item, dict) and all(
            item.get(k, _KEY_DEFAULTS.get(k)) == v for k, v in wanted.items()
        )
    if kind == "v:":
        return _json(item) == _json(json.loads(body))
    return kind == "i:" and str(index) == body


def _step(node: Any, element: str) -> tuple[Any, Any] | None:
    """(container, key or index) that ``element`` names inside ``node``, if it is there."""
    if isinstance(node, dict) and element.startswith("f:") and element[2:] in node:
        return node, element[2:]
    if isinstance(node, list):
        found = next((i for i, v in enumerate(node) if _matches(v, element, i)), None)
        return None if found is None else (node, found)
    return None


def remove_unowned(obj: dict[str, Any], paths: Iterable[Path], owned: set[Path]) -> None:
    """Remove each path nobody owns (itself or below); a string map left empty goes too."""
    owned_prefixes = {p[:n] for p in owned for n in range(1, len(p) + 1)}
    for path in sorted(paths, key=len):
        if path in owned_prefixes:
            continue
        trail, node = [], obj
        for element in path:
            place = _step(node, element)
            if place is None:
                break
            trail.append(place)
            node = place[0][place[1]]
        else:
            _delete(trail, path)


def _delete(trail: list[tuple[Any, Any]], path: Path) -> None:
    container, key = trail[-1]
    del container[key]
    if len(trail) > 1 and not container and path[-2][2:] in _STRING_MAPS:
        parent, parent_key = trail[-2]
        del parent[parent_key]


# ---- FieldsV1 -----------------------------------------------------------------------------


def _element_order(element: str) -> tuple[int, Any]:
    rank = "fkvi".index(element[0]) if element[:1] in ("f", "k", "v", "i") else 4
    return (rank, int(element[2:]) if rank == 3 else element)


def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 JSON of a path set (``"."`` first, then fields, keys, values)."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    return _finish(tree)


def _finish(node: dict[str, Any]) -> dict[str, Any]:
    children = {k: _finish(v) for k, v in node.items() if k != "."}
    if not children:
        return {}
    ordered = dict(sorted(children.items(), key=lambda kv: _element_order(kv[0])))
    return {".": {}, **ordered} if "." in node else ordered


def decode(fields: Any, prefix: Path = ()) -> set[Path]:
    """The path set of a FieldsV1 JSON; ValueError when it is not one."""
    if not isinstance(fields, dict):
        raise ValueError("FieldsV1 must be an object")
    out: set[Path] = set()
    for key, value in fields.items():
        if key == ".":
            out.add(prefix)
        elif not value:
            out.add((*prefix, key))
        else:
            out |= decode(value, (*prefix, key))
    return out


def path_string(path: Path) -> str:
    """``fieldpath.Path.String()``: ``.spec.containers[name="app"].image``."""
    return "".join(_element_string(element) for element in path)


def _element_string(element: str) -> str:
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        pairs = json.loads(body).items()
        return "[" + ",".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in pairs) + "]"
    if kind == "v:":
        return f"[={body}]"
    return f"[{body}]"


def ordered(paths: Iterable[Path]) -> list[Path]:
    """Paths in ``Set.Iterate`` order: at each level the members, then the children."""
    paths = set(paths)
    heads = sorted({p[0] for p in paths if p}, key=_element_order)
    members = [(h,) for h in heads if (h,) in paths]
    nested = [
        (h, *rest)
        for h in heads
        for rest in ordered(p[1:] for p in paths if len(p) > 1 and p[0] == h)
    ]
    return members + nested
