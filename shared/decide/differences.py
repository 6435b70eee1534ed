"""``rules[].ignoreDifferences``: fields whose value in Git is kept whatever the API says.

Argo CD users know the shape: ``jsonPointers`` (RFC 6901) and ``managedFieldsManagers`` (the
fields a named field manager owns, from the object's ``managedFields``; an HPA's
``kube-controller-manager`` owns a Deployment's ``/spec/replicas``). The watcher turns both into
one list of pointers per event (``owned_pointers`` reads ``fieldsV1``), and the branch worker
writes the document with those fields as the document in Git holds them (``keep_git_values``):
present there, Git's value; absent there, absent. An edit that changes only such fields then
gives the same document, which is no write (M3) and so no commit.

Where Git holds no document yet (the object is new to the folder), the API's values are written:
there is no Git value to keep. A list item is addressed by its position in the live object
(``k:`` and ``v:`` keys of ``fieldsV1`` are found there); a list item Git lacks is left as the API
has it, since removing it would move the items after it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
#: Longest list of pointers taken from one object's managedFields: an object can carry
#: thousands of owned fields; a manager that owns more than this keeps the first ones.
MAX_OWNED = 256
_ABSENT = object()


def escape(token: str) -> str:
    """One reference token of a JSON pointer (RFC 6901: ``~`` as ``~0``, ``/`` as ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


def tokens(pointer: str) -> list[str]:
    """The reference tokens of ``pointer`` ("/a/b~1c" -> ["a", "b/c"])."""
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def owned_pointers(
    managed_fields: Sequence[Mapping[str, Any]] | None, managers: Iterable[str], live: Obj
) -> tuple[str, ...]:
    """Pointers to every field the ``managers`` own in ``live`` (its ``managedFields``)."""
    names = set(managers)
    found: dict[str, None] = {}
    for entry in managed_fields or []:
        if entry.get("manager") not in names or not isinstance(entry.get("fieldsV1"), Mapping):
            continue
        _walk(entry["fieldsV1"], live, "", found)
    return tuple(list(found)[:MAX_OWNED])


def _walk(node: Mapping[str, Any], value: Any, at: str, found: dict[str, None]) -> None:
    """Collect the leaves of one ``fieldsV1`` tree (an empty node, or one that owns itself
    with ``.``), following ``value`` to turn list keys into positions."""
    if at and (not node or "." in node):
        found[at] = None
    for key, child in node.items():
        if key == "." or not isinstance(child, Mapping):
            continue
        step = _step(key, value)
        if step is None:
            continue  # owned once, gone from the live object since
        token, inner = step
        _walk(child, inner, f"{at}/{escape(token)}", found)


def _step(key: str, value: Any) -> tuple[str, Any] | None:
    """The pointer token of one ``fieldsV1`` key in ``value``, and the value it reaches."""
    kind, _, rest = key.partition(":")
    if kind == "f" and isinstance(value, Mapping):
        return rest, value.get(rest)
    if not isinstance(value, list):
        return None
    if kind == "i" and rest.isdigit() and int(rest) < len(value):
        return rest, value[int(rest)]
    try:
        wanted = json.loads(rest)
    except ValueError:
        return None
    for index, item in enumerate(value):
        if (kind == "v" and item == wanted) or (kind == "k" and _keyed(item, wanted)):
            return str(index), item
    return None


def _keyed(item: Any, keys: Any) -> bool:
    """Whether a list item carries every key of a ``k:`` entry with its value."""
    if not (isinstance(item, Mapping) and isinstance(keys, Mapping)):
        return False
    return all(item.get(k) == v for k, v in keys.items())


def _get(doc: Any, path: list[str]) -> Any:
    for token in path:
        if isinstance(doc, Mapping) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            return _ABSENT
    return doc


def _set(doc: Any, path: list[str], value: Any) -> None:
    """Set ``value`` at ``path``, making the maps on the way; a missing list item is left."""
    for index, token in enumerate(path):
        last = index == len(path) - 1
        if isinstance(doc, dict):
            if last:
                doc[token] = copy.deepcopy(value)
                return
            if not isinstance(doc.get(token), (dict, list)):
                doc[token] = {}
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and int(token) < len(doc):
            if last:
                doc[int(token)] = copy.deepcopy(value)
                return
            doc = doc[int(token)]
        else:
            return


def _remove(doc: Any, path: list[str]) -> None:
    """Remove the map entry at ``path`` (a list item is never removed: see the module)."""
    parent = _get(doc, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)


def keep_git_values(new: Obj, held: Obj, pointers: Iterable[str]) -> Obj:
    """``new`` with every field ``pointers`` name as ``held`` (Git's document) has it."""
    out = copy.deepcopy(new)
    for pointer in pointers:
        path = tokens(pointer)
        if not path:
            continue
        kept = _get(held, path)
        if kept is _ABSENT:
            _remove(out, path)
        else:
            _set(out, path, kept)
    for empty in ("metadata/annotations", "metadata/labels"):  # as sanitise leaves them
        parent = _get(out, empty.split("/"))
        if parent == {} and _get(held, empty.split("/")) is _ABSENT:
            _remove(out, empty.split("/"))
    return out
