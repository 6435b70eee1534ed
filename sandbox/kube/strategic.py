"""Strategic merge patch for the built-in kinds the sandbox serves, as kube-apiserver applies it.

Why it exists: ``kubectl apply``/``edit``/``patch`` and many controllers send strategic merge
patches to built-ins; lists such as a Deployment's containers merge by a key there, and a
stand-in that replaced them would hide bugs. The algorithm follows k8s.io/apimachinery
``pkg/util/strategicpatch/patch.go`` ``StrategicMergeMapPatch`` (``MergeParallelList`` and
``IgnoreUnmatchedNulls`` on, as the patch handler calls it):

- maps merge recursively, ``null`` deletes a key; a list whose field has ``patchStrategy:
  merge`` merges by its ``patchMergeKey`` (primitives: union without duplicates); any other
  list is replaced. Which fields merge is the ``_KIND_LISTS`` table, each entry read from the
  ``patchStrategy``/``patchMergeKey`` tags of k8s.io/api and k8s.io/apimachinery types.go.
- directives: ``$patch: replace|delete`` in a map, ``{"$patch": "delete", <key>: v}`` and
  ``{"$patch": "replace"}`` in a merging list (``merge`` there is refused as upstream does),
  ``$retainKeys``, ``$deleteFromPrimitiveList/<field>``, and ``$setElementOrder/<field>``,
  which is *used*: the merged list is ordered by it, server-only items interleaved by their
  live order (``normalizeElementOrder``/``mergeSortedSlice``). Without it the patch's own list
  gives the order, the same way; as upstream, an item new to the list sorts before the live
  items it cannot be compared with (a new env var lands first).
- values new to the object are taken with directive keys and nulls removed (upstream keeps
  them raw and the typed decode drops them). One upstream quirk is kept on purpose:
  ``$deleteFromPrimitiveList/x`` when the object has no ``x`` sets ``x`` to that list.
- errors carry upstream's status: bad directive formats 400, lists of lists 422, and the
  plain Go errors (missing merge key, unknown ``$patch``) 500 with reason ``""``.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.kube.patcherrors import (
    bad_request,
    go_format,
    go_type_name,
    internal,
    scalar_key,
    unprocessable,
)

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PREFIX = "$deleteFromPrimitiveList"
ORDER_PREFIX = "$setElementOrder"
_ABSENT: Any = object()

_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
_BAD_ORDER_LIST = "invalid patch format of setElementOrder list"

#: ObjectMeta: ``Finalizers`` patchStrategy merge (no key: primitives), ``OwnerReferences``
#: patchMergeKey uid (k8s.io/apimachinery pkg/apis/meta/v1/types.go).
_META_LISTS = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}
#: PodSpec (k8s.io/api core/v1/types.go): volumes merge,retainKeys by name; init/containers,
#: imagePullSecrets by name; hostAliases by ip. Tolerations have no strategy (replaced).
_POD_LISTS = {
    "volumes": "name",
    "initContainers": "name",
    "containers": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
}
#: Container: ports by containerPort, env by name, volumeMounts by mountPath.
_CONTAINER_LISTS = {"ports": "containerPort", "env": "name", "volumeMounts": "mountPath"}


def _pod_template_lists(prefix: str) -> dict[str, str]:
    lists = {f"{prefix}.{field}": key for field, key in _POD_LISTS.items()}
    for containers in ("initContainers", "containers"):
        lists.update({f"{prefix}.{containers}.{f}": k for f, k in _CONTAINER_LISTS.items()})
    return lists


#: Merging lists by kind, as dotted field paths (list items are not part of a path). Role
#: ``rules`` and RoleBinding ``subjects`` carry no patchStrategy (k8s.io/api rbac/v1/types.go):
#: they are replaced, so they are absent here. Service ``ports`` merge by port; Deployment
#: ``status.conditions`` by type (apps/v1 DeploymentStatus).
_KIND_LISTS: dict[str, dict[str, str]] = {
    "Deployment": {**_pod_template_lists("spec.template.spec"), "status.conditions": "type"},
    "Service": {"spec.ports": "port"},
}


def merge_lists(kind: str) -> dict[str, str]:
    """The fields of ``kind`` whose lists merge, mapped to their merge key ("" = primitives)."""
    return {**_META_LISTS, **_KIND_LISTS.get(kind, {})}


def strategic_merge_patch(target: dict[str, Any], patch: Any, kind: str) -> dict[str, Any]:
    """``target`` with the strategic merge ``patch`` applied, for built-in ``kind``."""
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_type_name(patch)} into Go value of type "
            "map[string]interface {}"
        )
    merged: dict[str, Any] = _merge_map(
        copy.deepcopy(target), copy.deepcopy(patch), "", merge_lists(kind)
    )
    return merged


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def _is_directive(key: str) -> bool:
    return key in (DIRECTIVE, RETAIN_KEYS) or key.startswith((DELETE_PREFIX, ORDER_PREFIX))


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None and not _is_directive(k)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _field_of(key: str, prefix: str, error: str) -> str:
    head, separator, field = key.partition("/")
    if head != prefix or not separator:
        raise bad_request(error)
    return field


# ---- maps ---------------------------------------------------------------------------------


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], path: str, lists: dict[str, str]
) -> dict[str, Any]:
    if DIRECTIVE in patch:
        return _map_directive(patch)
    _retain_keys(original, patch)
    for key in [k for k in patch if k.startswith(ORDER_PREFIX)]:
        _order_field(original, patch, key, path, lists)
    for key, value in patch.items():
        _merge_field(original, key, value, path, lists)
    return original


def _map_directive(patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch[DIRECTIVE]
    if directive == "replace":
        replaced: dict[str, Any] = _clean(patch)
        return replaced
    if directive == "delete":
        return {}
    raise internal(f"unknown patch type: {go_format(directive)} in map: {go_format(patch)}")


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise bad_request(_BAD_RETAIN_KEYS)
    kept = {k for k in keep if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_PREFIX, ORDER_PREFIX)):
            continue
        if key not in kept:
            raise bad_request(_BAD_RETAIN_KEYS)
    for key in [k for k in original if k not in kept]:
        del original[key]


def _merge_field(
    original: dict[str, Any], key: str, value: Any, path: str, lists: dict[str, str]
) -> None:
    is_delete = key.startswith(DELETE_PREFIX)
    if is_delete:
        key = _field_of(key, DELETE_PREFIX, _BAD_PRIMITIVE_LIST)
    if value is None:
        original.pop(key, None)
        return
    old = original.get(key, _ABSENT)
    child = _join(path, key)
    if isinstance(old, dict) and isinstance(value, dict):
        original[key] = _merge_map(old, value, child, lists)
    elif isinstance(old, list) and isinstance(value, list):
        original[key] = _merge_list(old, value, child, lists, is_delete)
    else:
        original[key] = _clean(value)


# ---- lists --------------------------------------------------------------------------------


def _merge_list(
    old: list[Any], new: list[Any], path: str, lists: dict[str, str], is_delete: bool
) -> list[Any]:
    if path not in lists:
        replaced: list[Any] = _clean(new)
        return replaced
    key = lists[path]
    if not old and not new:
        return old
    if _element_kind(old + new) != "map":
        if is_delete:
            return [item for item in old if _position(new, item, "") < 0]
        return _normalize(_dedupe(old + new), new, old, "")
    if not key:
        raise internal("cannot merge lists without merge key for type struct")
    old, new = _special_elements(old, new, key)
    return _normalize(_merge_items(old, new, key, path, lists), new, old, key)


def _go_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    return go_type_name(value)


def _element_kind(items: list[Any]) -> str:
    kinds = [_go_kind(item) for item in items]
    if kinds[0] == "slice":
        raise unprocessable("lists of lists are not supported")
    if any(kind != kinds[0] for kind in kinds):
        raise internal(f"list element types are not identical: {go_format(items)}")
    return kinds[0]


def _identity(item: Any, key: str) -> tuple[str, Any]:
    if key:
        return scalar_key(item.get(key) if isinstance(item, dict) else None)
    return scalar_key(item)


def _position(order: list[Any], item: Any, key: str) -> int:
    wanted = _identity(item, key)
    return next((i for i, v in enumerate(order) if _identity(v, key) == wanted), -1)


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[tuple[str, Any]] = set()
    unique = []
    for item in items:
        if _identity(item, "") not in seen:
            seen.add(_identity(item, ""))
            unique.append(item)
    return unique


def _no_merge_key(item: Any, key: str) -> str:
    return f"map: {go_format(item)} does not contain declared merge key: {key}"


def _special_elements(old: list[Any], new: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """``mergeSliceWithSpecialElements``: deletions applied, ``replace`` noted, rest returned."""
    plain, replace = [], False
    for item in new:
        directive = item.get(DIRECTIVE, _ABSENT)
        if directive is _ABSENT:
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise internal(_no_merge_key(item, key))
            old = [v for v in old if _identity(v, key) != _identity(item, key)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise internal("merging lists cannot yet be specified in the patch")
        else:
            raise internal(f"unknown patch type: {go_format(directive)} in map: {go_format(item)}")
    return (plain, []) if replace else (old, plain)


def _merge_items(
    old: list[Any], new: list[Any], key: str, path: str, lists: dict[str, str]
) -> list[Any]:
    merged = list(old)
    for item in new:
        if key not in item:
            raise internal(_no_merge_key(item, key))
        found = _position(merged, item, key)
        if found >= 0 and isinstance(merged[found], dict):
            merged[found] = _merge_map(merged[found], item, path, lists)
        else:
            merged.append(_clean(item))
    return merged


def _normalize(merged: list[Any], order: list[Any], live: list[Any], key: str) -> list[Any]:
    """Items named by ``order`` in its order, the others in ``live`` order, interleaved."""
    named = sorted(
        (v for v in merged if _position(order, v, key) >= 0), key=lambda v: _position(order, v, key)
    )
    others = sorted(
        (v for v in merged if _position(order, v, key) < 0), key=lambda v: _position(live, v, key)
    )
    result, i, j = [], 0, 0
    while i < len(others) or j < len(named):
        left = _position(live, others[i], key) if i < len(others) else -1
        right = _position(live, named[j], key) if j < len(named) else -1
        if i < len(others) and (j >= len(named) or 0 <= left < right):
            result.append(others[i])
            i += 1
        else:
            result.append(named[j])
            j += 1
    return result


# ---- $setElementOrder ---------------------------------------------------------------------


def _order_field(
    original: dict[str, Any],
    patch: dict[str, Any],
    directive: str,
    path: str,
    lists: dict[str, str],
) -> None:
    """``mergePatchIntoOriginal`` for one ``$setElementOrder/<field>``."""
    order = patch.pop(directive)
    field = _field_of(directive, ORDER_PREFIX, _BAD_ORDER_LIST)
    live, given = original.get(field, _ABSENT), patch.pop(field, _ABSENT)
    for value in (order, live, given):
        if value is not _ABSENT and not isinstance(value, list):
            raise internal(f"expected a []interface {{}}, but received a {_go_kind(value)}")
    key = lists.get(_join(path, field), "")
    _check_order([] if given is _ABSENT else given, order, key)
    if live is _ABSENT and given is _ABSENT:
        return
    if given is _ABSENT:
        merged = live
    elif live is _ABSENT:
        merged = _clean(given)
    else:
        merged = _merge_list(live, given, _join(path, field), lists, False)
    original[field] = _normalize(merged, order, [] if live is _ABSENT else live, key)


def _check_order(given: list[Any], order: list[Any], key: str) -> None:
    """``validatePatchWithSetOrderList``: the patch must list items in the directive's order."""
    if not order or not given:
        return
    items = [v for v in given if not (isinstance(v, dict) and v.get(DIRECTIVE) == "delete")]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _identity(items[p], key) == _identity(order[s], key):
            p += 1
        s += 1
    if p < len(items):
        raise internal(
            f"The order in patch list:\n{go_format(given)}\n doesn't match "
            f"{ORDER_PREFIX} list:\n{go_format(order)}\n"
        )
