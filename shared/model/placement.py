"""``GitTarget.spec.placement`` and ``spec.serializeNamespace``: where new objects' files go.

A template gives a file's path under the GitTarget's ``path``, extension included
(``{namespace}/{resource}/{name}.yaml``). Variables: ``{group}``, ``{version}``,
``{resource}``, ``{namespace}``, ``{name}``, each with an optional ``|FALLBACK`` used when the
value is empty (the core group, a cluster-scoped object's namespace), and
``{label:KEY|FALLBACK}`` for an object's label. ``byType`` maps ``group/resource`` (``resource``
alone for the core group) to a template; ``default`` covers every other type; with neither, the
layout is today's (``shared.decide.placement.canonical_path``). ``useKustomize`` keeps a root
``kustomization.yaml`` listing every file the GitTarget writes. ``serializeNamespace: false``
leaves ``metadata.namespace`` out of the files (the root kustomization's ``namespace`` says it),
so it needs ``useKustomize``.

Parsed once, checked again as the CRD's rules check it, so a template stored before the rules
existed fails its own GitTarget (``InvalidPlacement``) with the parser's message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

VARIABLES = ("group", "version", "resource", "namespace", "name")
#: One ``{...}``: a variable or ``label:KEY``, and an optional ``|FALLBACK``.
FIELD = re.compile(r"\{([^{}|]*)(?:\|([^{}]*))?\}")
#: What a fallback may say: it becomes part of a path.
FALLBACK = re.compile(r"^[A-Za-z0-9._-]*$")
#: A label key (a DNS prefix and a name, as Kubernetes allows).
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
#: Literal text of a template: path characters, no braces.
LITERAL = re.compile(r"^[A-Za-z0-9._/@+=,-]*$")
SUFFIXES = (".yaml", ".yml")
#: Longest template, and most byType entries: a template is a path, and a type list a page.
MAX_TEMPLATE = 512
MAX_BY_TYPE = 64
#: A byType key: ``group/resource`` or ``resource``.
TYPE_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Placement:
    """A GitTarget's placement; the defaults are today's layout."""

    default: str = ""
    by_type: tuple[tuple[str, str], ...] = ()
    use_kustomize: bool = False
    serialize_namespace: bool = True
    problem: str = ""  # why it cannot be used ("": it can)

    @property
    def templated(self) -> bool:
        """Whether any template is set (else the canonical layout)."""
        return bool(self.default or self.by_type)

    def template_for(self, group: str, resource: str) -> str:
        """The template of a type ("": the canonical layout)."""
        wanted = f"{group}/{resource}" if group else resource
        return dict(self.by_type).get(wanted, self.default)

    @property
    def mode(self) -> str:
        """``status.placement.mode``: Plain or KustomizeRoot."""
        return "KustomizeRoot" if self.use_kustomize else "Plain"

    def to_data(self) -> dict[str, Any]:
        """Plain JSON data (for the branch worker's config)."""
        return {
            "default": self.default,
            "by_type": [list(p) for p in self.by_type],
            "use_kustomize": self.use_kustomize,
            "serialize_namespace": self.serialize_namespace,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> Placement:
        """The inverse of ``to_data`` (None: a config written before placement existed)."""
        if not data:
            return cls()
        return cls(
            str(data.get("default") or ""),
            tuple((str(k), str(v)) for k, v in data.get("by_type") or []),
            bool(data.get("use_kustomize")),
            data.get("serialize_namespace") is not False,
        )


def template_problem(template: str) -> str:
    """Why ``template`` cannot place a file ("": it can)."""
    if len(template) > MAX_TEMPLATE:
        return f"longer than {MAX_TEMPLATE} characters"
    if not template.endswith(SUFFIXES):
        return "must end with .yaml or .yml (the extension is part of the template)"
    if template.startswith("/") or ".." in template.split("/"):
        return "must stay under the GitTarget's path: no leading /, no '..' segment"
    for found in FIELD.finditer(template):
        name, fallback = found.group(1), found.group(2) or ""
        if name.startswith("label:"):
            if not LABEL_KEY.match(name.removeprefix("label:")):
                return f"{{{name}}} names no valid label key"
        elif name not in VARIABLES:
            known = ", ".join("{" + v + "}" for v in VARIABLES)
            return f"{{{name}}} is not a variable ({known}, {{label:KEY|FALLBACK}})"
        if not FALLBACK.match(fallback) or fallback in (".", ".."):
            return f"the fallback {fallback!r} may hold only letters, digits, '.', '_' and '-'"
    if not LITERAL.match(FIELD.sub("", template)):
        return "outside {...} a template holds only path characters (letters, digits, . _ - /)"
    return ""


def _map(value: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def parse_placement(spec: Mapping[str, Any]) -> Placement:
    """``spec.placement`` and ``spec.serializeNamespace`` of a GitTarget's spec."""
    raw = _map(spec.get("placement"))
    default = str(raw.get("default") or "")
    by_type = tuple(sorted((str(k), str(v)) for k, v in _map(raw.get("byType")).items()))
    use_kustomize = raw.get("useKustomize") is True
    serialize = spec.get("serializeNamespace") is not False
    placement = Placement(default, by_type, use_kustomize, serialize)
    return Placement(default, by_type, use_kustomize, serialize, _problem(placement))


def _problem(placement: Placement) -> str:
    if len(placement.by_type) > MAX_BY_TYPE:
        return f"spec.placement.byType has more than {MAX_BY_TYPE} entries"
    if placement.default:
        problem = template_problem(placement.default)
        if problem:
            return f"spec.placement.default {placement.default!r}: {problem}"
    for key, template in placement.by_type:
        if not TYPE_KEY.match(key):
            return f"spec.placement.byType key {key!r} is not group/resource or resource"
        problem = template_problem(template)
        if problem:
            return f"spec.placement.byType[{key}] {template!r}: {problem}"
    if not placement.serialize_namespace and not placement.use_kustomize:
        return "spec.serializeNamespace: false needs spec.placement.useKustomize: true"
    return ""
