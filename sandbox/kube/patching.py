"""The three body patch types of the API double, with the real kube-apiserver's answers.

Why it exists: a client that patches the sandbox must see what a real cluster does, both the
result and the refusal (status and reason), or tests built on the sandbox prove nothing. The
functions are pure: they never mutate their arguments and return a new object.

- ``merge_patch``: RFC 7386 as ``gopkg.in/evanphx/json-patch.v4`` ``MergePatch`` does it (the
  library apiserver ``handlers/patch.go`` calls): null deletes, nulls inside values new to the
  target are pruned, a patch that is not a JSON object or array is 400 "Invalid JSON Patch", an
  array patch yields an array that cannot be an object (422).
- ``json_patch``: RFC 6902 as the same library applies it (``~1``/``~0``, ``-`` append,
  negative indices). A patch that does not decode is 400; any failing operation, a failed
  ``test`` included, is 422 ``NewGenericServerResponse(422)``: reason Invalid and the fixed
  message "the server rejected our request due to an error in our request" (the library's own
  text is kept in ``PatchError.detail``). More than 10000 operations is 413. Library quirks
  kept: ``replace`` of a missing object member adds it, ``copy``/``move`` from a missing member
  moves null, and ``test`` of a missing member against ``null`` passes.
- ``strategic_merge_patch``: lives in ``sandbox.kube.strategic`` and is re-exported here.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from sandbox.kube.patcherrors import (
    PatchError,
    bad_request,
    go_type_name,
    json_equal,
    unprocessable,
)
from sandbox.kube.strategic import strategic_merge_patch

__all__ = ["PatchError", "json_patch", "merge_patch", "strategic_merge_patch"]

#: apiserver handlers/patch.go ``maxJSONPatchOperations``.
MAX_JSON_PATCH_OPERATIONS = 10000
_INDEX = re.compile(r"^[+-]?[0-9]+$")
_ESCAPE = re.compile(r"~[01]")
_ABSENT = object()


class _OpFailed(Exception):
    """One JSON patch operation did not apply; the text is the library's error string."""


# ---- JSON merge patch (RFC 7386) ---------------------------------------------------------


def merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """``target`` with the RFC 7386 merge ``patch`` applied, as evanphx MergePatch applies it."""
    if isinstance(patch, list):
        raise PatchError(
            422,
            "Invalid",
            ' "" is invalid: patch: Invalid value: "[...]": json: cannot '
            "unmarshal array into Go value of type map[string]interface {}",
        )
    if not isinstance(patch, dict):
        raise bad_request("Invalid JSON Patch")
    result = copy.deepcopy(target)
    _merge_docs(result, copy.deepcopy(patch))
    return result


def _merge_docs(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif doc.get(key) is None:
            doc[key] = _prune_nulls(value)
        else:
            doc[key] = _merge_value(doc[key], value)


def _merge_value(current: Any, patch: Any) -> Any:
    if not isinstance(current, dict):
        return _prune_nulls(patch)
    if not isinstance(patch, dict):
        return patch
    _merge_docs(current, patch)
    return current


def _prune_nulls(value: Any) -> Any:
    """Nulls removed from objects at any depth; null array elements stay (pruneAryNulls)."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


# ---- JSON patch (RFC 6902) ----------------------------------------------------------------


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """``target`` with the RFC 6902 operations ``ops`` applied, all or nothing."""
    if ops is None:
        return copy.deepcopy(target)
    if not isinstance(ops, list):
        raise bad_request(
            f"json: cannot unmarshal {go_type_name(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_type_name(op)} into Go value of "
                "type jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed "
            f"maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}",
        )
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            _apply_op(doc, op)
        except _OpFailed as failure:
            raise unprocessable(str(failure)) from None
    return doc


def _apply_op(doc: dict[str, Any], op: dict[str, Any]) -> None:
    kind = op.get("op")
    kind = kind if isinstance(kind, str) else "unknown"
    handler = _OPERATIONS.get(kind)
    if handler is None:
        raise _OpFailed(f"Unexpected kind: {kind}")
    handler(doc, op)


def _path(op: dict[str, Any], field: str, verb: str) -> str:
    value = op.get(field)
    if not isinstance(value, str):
        raise _OpFailed(f"{verb} operation failed to decode {field}: missing value")
    return value


def _unescape(token: str) -> str:
    return _ESCAPE.sub(lambda m: "/" if m.group(0) == "~1" else "~", token)


def _locate(doc: dict[str, Any], path: str) -> tuple[dict[str, Any] | list[Any], str] | None:
    """The container holding ``path``'s last token, and that token (evanphx ``findObject``)."""
    tokens = path.split("/")
    if len(tokens) < 2:
        return None
    node: Any = doc
    for token in tokens[1:-1]:
        node = _child(node, _unescape(token))
        if not isinstance(node, dict | list):
            return None
    return node, _unescape(tokens[-1])


def _child(node: dict[str, Any] | list[Any], key: str) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if not _INDEX.match(key) or not 0 <= int(key) < len(node):
        return None
    return node[int(key)]


def _index(key: str, size: int, path: str) -> int:
    if not _INDEX.match(key):
        raise _OpFailed(
            f"error in operation for path: '{path}': value was not a proper array index: '{key}'"
        )
    idx = int(key)
    if idx >= size or idx < -size:
        raise _OpFailed(
            f"error in operation for path: '{path}': Unable to access invalid "
            f"index: {idx}: invalid index referenced"
        )
    return idx + size if idx < 0 else idx


def _read(where: tuple[dict[str, Any] | list[Any], str], path: str) -> Any:
    node, key = where
    if isinstance(node, dict):
        return node.get(key)
    return node[_index(key, len(node), path)]


def _insert(where: tuple[dict[str, Any] | list[Any], str], value: Any, path: str) -> None:
    node, key = where
    if isinstance(node, dict):
        node[key] = value
    elif key == "-":
        node.append(value)
    else:
        node.insert(_index(key, len(node) + 1, path), value)


def _delete(where: tuple[dict[str, Any] | list[Any], str], path: str) -> None:
    node, key = where
    if isinstance(node, dict):
        if key not in node:
            raise _OpFailed(
                f"error in remove for path: '{path}': Unable to remove nonexistent "
                f"key: {key}: missing value"
            )
        del node[key]
    else:
        del node[_index(key, len(node), path)]


def _target(doc: dict[str, Any], op: dict[str, Any], verb: str, field: str = "path") -> Any:
    path = _path(op, field, verb)
    where = _locate(doc, path)
    if where is None:
        raise _OpFailed(
            f'{verb} operation does not apply: doc is missing {field}: "{path}": missing value'
        )
    return where, path


def _op_add(doc: dict[str, Any], op: dict[str, Any]) -> None:
    where, path = _target(doc, op, "add")
    _insert(where, copy.deepcopy(op.get("value")), path)


def _op_remove(doc: dict[str, Any], op: dict[str, Any]) -> None:
    where, path = _target(doc, op, "remove")
    _delete(where, path)


def _op_replace(doc: dict[str, Any], op: dict[str, Any]) -> None:
    where, path = _target(doc, op, "replace")
    node, key = where
    if isinstance(node, list):
        node[_index(key, len(node), path)] = copy.deepcopy(op.get("value"))
    else:
        node[key] = copy.deepcopy(op.get("value"))


def _op_move(doc: dict[str, Any], op: dict[str, Any]) -> None:
    source, from_path = _target(doc, op, "move", "from")
    value = _read(source, from_path)
    _delete(source, from_path)
    where, path = _target(doc, op, "move")
    _insert(where, value, path)


def _op_copy(doc: dict[str, Any], op: dict[str, Any]) -> None:
    source, from_path = _target(doc, op, "copy", "from")
    value = copy.deepcopy(_read(source, from_path))
    where, path = _target(doc, op, "copy")
    _insert(where, value, path)


def _op_test(doc: dict[str, Any], op: dict[str, Any]) -> None:
    where, path = _target(doc, op, "test")
    actual = _read(where, path)
    expected = op.get("value", _ABSENT)
    if actual is None and expected is None:
        return
    if expected is _ABSENT or not json_equal(actual, expected):
        raise _OpFailed(f"testing value {path} failed: test failed")


_OPERATIONS = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}
