"""API resource types as discovery describes them, and a cluster's discovery snapshot.

WatchRules name resources by group, version and plural (or ``*``); turning those names into
watchable types is a pure function of a discovery snapshot (``shared.decide.resolution``),
so the snapshot is a plain record that the Kubernetes adapter fills and the decisions read.
"""

from __future__ import annotations

from dataclasses import dataclass

#: (API group, kind) a GitTarget names sensitive; kind ``*``: every kind of that group.
SensitiveKind = tuple[str, str]


def sensitive_kind(group: str, kind: str, extra: tuple[SensitiveKind, ...] = ()) -> bool:
    """M10: objects whose payload never leaves the cluster in plain text: anything of kind
    ``Secret`` in any group (a CRD may borrow the name and the meaning), and whatever the
    GitTarget's ``spec.sensitive`` names."""
    return kind == "Secret" or any(g == group and k in (kind, "*") for g, k in extra)


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One served resource type: where it is served, its kind, and whether it is namespaced."""

    group: str
    version: str
    resource: str  # the plural name, as in the URL
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``group/resource`` (``/configmaps`` for the core group), as cursors are keyed."""
        return f"{self.group}/{self.resource}"

    @property
    def watchable(self) -> bool:
        """True when the type can be listed and watched."""
        return {"list", "watch"} <= self.verbs


@dataclass(frozen=True, slots=True)
class Catalog:
    """What one cluster serves: every group's versions (preferred first) and their resources."""

    #: group -> served versions, the preferred version first ("" is the core group).
    versions: dict[str, tuple[str, ...]]
    resources: tuple[ApiResource, ...]

    def preferred_version(self, group: str) -> str | None:
        """The group's preferred version, or None when the group is not served."""
        served = self.versions.get(group)
        return served[0] if served else None

    def in_group_version(self, group: str, version: str) -> tuple[ApiResource, ...]:
        """The resources served at ``group/version``."""
        return tuple(r for r in self.resources if r.group == group and r.version == version)
