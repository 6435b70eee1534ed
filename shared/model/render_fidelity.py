"""The render-fidelity gate (issue 27 item 8): in a folder a Flux Kustomization applies with
``postBuild`` substitutions, a write is made only where the applier's render of it gives the
live object.

The applier renders the folder, substitutes variables in each object's text
(``shared.model.envsubst``) and applies the result. So Git may hold ``replicas: ${REPLICAS}``
where the cluster holds ``replicas: 3``. Writing the live object as it is would replace the
variable by its value, and the folder would no longer say what its author meant. Two steps:

1. ``keep_variables``: the live object to write, with every string of Git's document that
   holds a variable kept where its render still gives the live value (nothing changed
   there). A variable whose render no longer gives the live value (the object was edited
   there) cannot be written without losing it: ``Mismatch``.
2. ``render_matches``: the bytes about to be written, rendered as the applier renders them,
   must hold the live object; else the write would be undone, or change the object, at the
   next apply: ``Mismatch``. A ``$`` construct the render cannot be computed for is
   ``Unverifiable``.

Fields a rule's ``ignoreDifferences`` names (``ignored``, JSON pointers) are left out of both
steps: the writer gives them Git's value whatever the live one is (issue 27.13), so the render
there is Git's by the user's choice and says nothing about the live object.

Both are pure; the writer (services/branch_worker/render_gate.py) turns them into refusals.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

from shared.model.envsubst import Unsupported, substitute
from shared.model.manifest import parse

#: GitPathAccepted=False reasons of this gate (docs/writing.md "What is refused").
RENDER_DOES_NOT_MATCH_LIVE = "RenderDoesNotMatchLive"
RENDER_NOT_VERIFIABLE = "RenderNotVerifiable"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The render of what would be written is not the live object."""

    message: str
    reason: str = RENDER_DOES_NOT_MATCH_LIVE


def _typed(text: str) -> Any:
    """``text`` read as a plain YAML scalar (how it reads when a variable filled a plain
    scalar), or the text itself when it does not read as one."""
    try:
        value = YAML(typ="safe", pure=True).load(text)
    except Exception:
        return text
    return value if isinstance(value, (str, int, float, bool)) or value is None else text


def _renders_to(held: str, live: Any, values: Mapping[str, str]) -> bool:
    rendered = substitute(held, values)
    return live == rendered or (not isinstance(live, str) and live == _typed(rendered))


def keep_variables(
    in_git: Mapping[str, Any],
    live: Mapping[str, Any],
    values: Mapping[str, str],
    label: str,
    ignored: Collection[str] = (),
) -> dict[str, Any] | Mismatch:
    """``live`` with the strings of ``in_git`` that hold a ``$`` kept where they render to
    the live value; ``Mismatch`` naming the first field whose variable the live value
    contradicts. The fields ``ignored`` names are left as ``live`` has them (Git's value,
    which the writer put there)."""
    out = copy.deepcopy(dict(live))
    try:
        problem = _keep(in_git, out, values, "", _Skip(ignored))
    except Unsupported as err:
        return Mismatch(f"{label}: Git's document cannot be rendered: {err}", RENDER_NOT_VERIFIABLE)
    return out if problem is None else Mismatch(f"{label}: {problem}")


class _Skip:
    """The JSON pointers (RFC 6901) of the ignored fields, followed down a walk."""

    def __init__(self, pointers: Collection[str], at: str = "") -> None:
        self.pointers = frozenset(pointers)
        self.at = at

    def step(self, key: object) -> _Skip:
        token = str(key).replace("~", "~0").replace("/", "~1")
        return _Skip(self.pointers, f"{self.at}/{token}") if self.pointers else self

    def ignored(self) -> bool:
        return self.at in self.pointers


def _keep(held: Any, live: Any, values: Mapping[str, str], path: str, skip: _Skip) -> str | None:
    """Walk Git's document and the live one together, keeping Git's variables in ``live``;
    the first contradiction, else None."""
    if isinstance(held, Mapping) and isinstance(live, dict):
        pairs = [(k, v, f"{path}.{k}" if path else str(k)) for k, v in held.items() if k in live]
    elif isinstance(held, list) and isinstance(live, list) and len(held) == len(live):
        pairs = [(i, v, f"{path}[{i}]") for i, v in enumerate(held)]
    else:
        return None
    for key, value, sub in pairs:
        inner = skip.step(key)
        if inner.ignored():
            continue
        if isinstance(value, str) and "$" in value:
            if not _renders_to(value, live[key], values):
                return _contradiction(sub, value, live[key], values)
            live[key] = value
        else:
            found = _keep(value, live[key], values, sub, inner)
            if found is not None:
                return found
    return None


def _contradiction(path: str, held: str, live: Any, values: Mapping[str, str]) -> str:
    return (
        f"{path} is {held!r} in Git, which the Kustomization's postBuild renders as "
        f"{substitute(held, values)!r}, but the live value is {live!r}: a write would lose "
        "the variable (change the value the Kustomization substitutes, or the file)"
    )


def render_matches(
    data: bytes,
    live: Mapping[str, Any],
    values: Mapping[str, str],
    label: str,
    ignored: Collection[str] = (),
) -> Mismatch | None:
    """None when the file ``data``, rendered with ``values``, holds ``live`` exactly, but for
    the fields ``ignored`` names (left out of both)."""
    try:
        rendered = substitute(data.decode(), values)
    except Unsupported as err:
        return Mismatch(
            f"{label}: the Kustomization's postBuild render of its file cannot be computed: {err}",
            RENDER_NOT_VERIFIABLE,
        )
    except UnicodeDecodeError:
        return Mismatch(f"{label}: its file is not text", RENDER_NOT_VERIFIABLE)
    try:
        docs = parse(rendered.encode())
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return Mismatch(f"{label}: the postBuild render of its file is not YAML: {first}")
    wanted = _without(live, ignored)
    if any(_without(doc, ignored) == wanted for doc in docs):
        return None
    return Mismatch(
        f"{label}: the Kustomization's postBuild render of what would be written is not the "
        "live object, so the next apply would change it"
    )


def _without(doc: Any, pointers: Collection[str]) -> Any:
    """``doc`` without the fields ``pointers`` name (a list item stays: removing it would
    move the items after it, so its value is blanked)."""
    if not pointers:
        return doc
    out = copy.deepcopy(doc)
    for pointer in pointers:
        path = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        parent = out
        for token in path[:-1]:
            if isinstance(parent, Mapping):
                parent = parent.get(token)
            elif isinstance(parent, list) and token.isdigit() and int(token) < len(parent):
                parent = parent[int(token)]
            else:
                parent = None
                break
        if not path:
            continue
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif isinstance(parent, list) and path[-1].isdigit() and int(path[-1]) < len(parent):
            parent[int(path[-1])] = None
    return out
