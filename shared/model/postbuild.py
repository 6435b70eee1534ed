"""A Flux Kustomization's ``spec.postBuild`` as the variables its render substitutes.

``spec.postBuild.substitute`` is a map of names to values; ``substituteFrom`` lists
ConfigMaps and Secrets (``{kind, name, optional}``, in the Kustomization's namespace) whose
data are more of them (../shared/facts/appliers.md lists the field; the render itself is
``shared.model.envsubst``). Where the same name has different values in two places, which one
the applier uses is not known here, so the render cannot be computed: ``Mismatch``
(``RenderNotVerifiable``). A source that is missing and not ``optional`` makes the applier's
own build fail, and nothing of the folder can be shown to render as the live object: also
``Mismatch``. A missing ``optional`` source adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shared.model.render_fidelity import RENDER_NOT_VERIFIABLE, Mismatch

#: ``(kind, name)`` -> that object's data as text, or None when it does not exist.
SourceReader = Callable[[str, str], Mapping[str, str] | None]


def sources(kustomization: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """``substituteFrom``'s ``(kind, name, optional)`` in order."""
    post = _post_build(kustomization)
    found = []
    for item in post.get("substituteFrom") or []:
        if isinstance(item, Mapping):
            found.append(
                (str(item.get("kind", "")), str(item.get("name", "")), bool(item.get("optional")))
            )
    return found


def _post_build(kustomization: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = kustomization.get("spec")
    post = spec.get("postBuild") if isinstance(spec, Mapping) else None
    return post if isinstance(post, Mapping) else {}


def substitutions(
    kustomization: Mapping[str, Any], read: SourceReader
) -> Mapping[str, str] | Mismatch | None:
    """The variables the Kustomization substitutes; None when it substitutes nothing."""
    post = _post_build(kustomization)
    if not post.get("substitute") and not post.get("substituteFrom"):
        return None
    values: dict[str, str] = {}
    origin: dict[str, str] = {}
    places: list[tuple[str, Mapping[str, Any]]] = [
        ("spec.postBuild.substitute", post.get("substitute") or {})
    ]
    for kind, name, optional in sources(kustomization):
        data = read(kind, name)
        if data is None:
            if optional:
                continue
            return Mismatch(
                f"its Kustomization's postBuild.substituteFrom {kind} {name} does not exist "
                "(and is not optional), so its render cannot be computed",
                RENDER_NOT_VERIFIABLE,
            )
        places.append((f"{kind} {name}", data))
    for place, data in places:
        for key, value in data.items():
            text = str(value)
            if key in values and values[key] != text:
                return Mismatch(
                    f"variable {key} has one value in {origin[key]} and another in {place}; "
                    "which one the Kustomization substitutes is not known here",
                    RENDER_NOT_VERIFIABLE,
                )
            values[str(key)] = text
            origin.setdefault(str(key), place)
    return values
