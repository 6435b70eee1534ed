"""``ApplierConfigured`` (S2): is a GitTarget's applier set up so that asking it is safe?

The product decides when Git is applied, so the applier must apply only when asked, apply
this repository's branch, cover this GitTarget's folder, and let us ask. This module is the
pure half of the check: given the objects the watcher fetched from the applier's cluster and
the SelfSubjectAccessReview answers, it names the first thing that is wrong, in the order a
person would fix them (the guide ``docs/flux.md`` lists the same order):

- admission: the applier's ClusterProvider exists, its ``accessFrom`` admits the
  GitTarget's namespace, and an applier in another namespace than the GitTarget's is allowed
  by its ``crossNamespaceAppliers`` (T2; all checked before anything is read through it, and
  again by the dispatcher at every attempt, D2);
- Flux: the Kustomization exists; its ``sourceRef`` is a GitRepository that exists, follows
  this repository and branch (``spec.ref`` by Flux's precedence, appliers.md F2), and has an
  interval of at least ``min_source_interval``; the Kustomization's ``spec.path`` covers the
  GitTarget's path; we may get and patch both;
- Argo CD (``argo_check.py``; facts: appliers.md A1): the Application syncs a single source,
  this repository's branch, only when asked, covering the GitTarget's path; we may get and
  update it.

A configuration error is ``False`` (it stalls the GitTarget); a check that could not finish
is ``Unknown`` (it heals by itself). The Flux source rule (``source_problem``) and the
Application rule (``application_problem``) are also the ones the dispatcher applies just before
it asks (D4, D5), so the two never judge an applier apart.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from shared.decide.conditions import FALSE, TRUE, Wanted
from shared.decide.selectors import admits, allows_applier
from shared.decide.targets import (
    APPLIER_CONFIGURED,
    CLUSTER_PROVIDER_NOT_FOUND,
    INVALID_APPLIER,
    NOT_ADMITTED,
)
from shared.model.config import ApplierRef
from shared.model.crds import ClusterProviderView
from shared.model.duration import DurationError, parse_duration
from shared.model.ids import normalise_url
from shared.model.webhook import WebhookEndpoint

Raw = Mapping[str, Any]
UNKNOWN = "Unknown"

CONFIGURED = "Configured"
APPLIER_NOT_FOUND = "ApplierNotFound"
SOURCE_MISMATCH = "SourceMismatch"
SOURCE_FETCHES_ON_ITS_OWN = "SourceFetchesOnItsOwn"
PATH_NOT_COVERED = "PathNotCovered"
ACCESS_DENIED = "AccessDenied"
AUTOMATED_SYNC_ENABLED = "AutomatedSyncEnabled"
CROSS_NAMESPACE_APPLIER = "CrossNamespaceApplier"
#: Unknown reasons: the check did not reach a verdict this time.
CHECK_TIMED_OUT = "CheckTimedOut"
CHECK_FAILED = "CheckFailed"
NOT_CHECKED = "NotChecked"

FLUX_SOURCE_GROUP = "source.toolkit.fluxcd.io"
FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
ARGO_GROUP = "argoproj.io"
#: GitRepository ``spec.ref`` absent or empty follows this branch (appliers.md F2).
FLUX_DEFAULT_BRANCH = "master"


@dataclass(frozen=True, slots=True)
class Subject:
    """The GitTarget side of the check: what the applier must follow and cover."""

    namespace: str  # the GitTarget's namespace
    url: str  # the GitProvider's repository URL
    branch: str
    path: str
    applier: ApplierRef
    webhook: WebhookEndpoint | None = None  # spec.applier.webhook, for a Webhook applier


@dataclass(frozen=True, slots=True)
class Permission:
    """One SelfSubjectAccessReview question (``name`` empty means any name)."""

    verb: str
    group: str
    resource: str
    namespace: str
    name: str = ""

    def describe(self) -> str:
        """``patch gitrepositories.source.toolkit.fluxcd.io flux-system/app``."""
        where = f"{self.namespace}/{self.name}" if self.name else self.namespace
        return f"{self.verb} {self.resource}.{self.group} {where}"


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A Kustomization's ``spec.sourceRef``, its namespace defaulted to the Kustomization's."""

    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class FluxFound:
    """What the watcher read for a Kustomization (None: not found)."""

    kustomization: Raw | None
    source: Raw | None
    allowed: Mapping[Permission, bool]


def mapping(value: Any) -> Raw:
    """``value`` when it is a mapping (a YAML object), else an empty one."""
    return cast(Raw, value) if isinstance(value, Mapping) else {}


def misconfigured(reason: str, message: str) -> Wanted:
    """A configuration error: ApplierConfigured False (it stalls the GitTarget)."""
    return Wanted(APPLIER_CONFIGURED, FALSE, reason, message)


def unknown(reason: str, message: str) -> Wanted:
    """The check reached no verdict (it timed out, or the cluster did not answer)."""
    return Wanted(APPLIER_CONFIGURED, UNKNOWN, reason, message)


def configured(subject: Subject) -> Wanted:
    """Every rule holds."""
    ref = subject.applier
    text = f"{ref.kind} {ref.namespace}/{ref.name} applies this folder only when asked"
    return Wanted(APPLIER_CONFIGURED, TRUE, CONFIGURED, text)


def invalid_applier(problem: str) -> Wanted:
    """``spec.applier`` itself breaks the CRD's rules (checked again by the product)."""
    return misconfigured(INVALID_APPLIER, problem)


@dataclass(frozen=True, slots=True)
class Problem:
    """Why an applier may not be asked: a condition reason and a message for people."""

    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


def admission(
    subject: Subject, cluster: ClusterProviderView | None, labels: Mapping[str, str]
) -> Wanted | None:
    """A problem with the applier's ClusterProvider, or None when it admits the GitTarget."""
    problem = admission_problem(subject.applier, subject.namespace, cluster, labels)
    return None if problem is None else misconfigured(problem.reason, problem.message)


def admission_problem(
    ref: ApplierRef, namespace: str, cluster: ClusterProviderView | None, labels: Mapping[str, str]
) -> Problem | None:
    """Does the applier's ClusterProvider let a GitTarget in ``namespace`` (whose labels are
    ``labels``) use the applier ``ref``? (S2 and D2, once; T2 for another namespace.)

    The ClusterProvider must exist and admit the namespace (``accessFrom``); an applier in
    another namespace must also be allowed for it (``crossNamespaceAppliers``), as Flux's
    ``--no-cross-namespace-refs`` refuses a reference to another tenant's objects unless the
    platform admin allows it. A webhook's reference is in the GitTarget's own namespace.
    """
    name = ref.cluster_provider
    if cluster is None:
        return Problem(CLUSTER_PROVIDER_NOT_FOUND, f"applier ClusterProvider {name} not found")
    if not admits(cluster.access_from, namespace, labels):
        return Problem(
            NOT_ADMITTED,
            f"applier ClusterProvider {name} does not admit namespace {namespace} "
            "(spec.accessFrom)",
        )
    if not allows_applier(cluster.cross_namespace_appliers, ref.namespace, namespace, labels):
        return Problem(
            CROSS_NAMESPACE_APPLIER,
            f"{ref.kind} {ref.namespace}/{ref.name} is not in the GitTarget's namespace "
            f"{namespace}; a platform admin may allow it in ClusterProvider {name}: "
            f"spec.crossNamespaceAppliers[] with namespace {ref.namespace} and an accessFrom "
            f"that admits {namespace}",
        )
    return None


def source_ref(kustomization: Raw) -> SourceRef:
    """The Kustomization's source, in its own namespace when ``sourceRef`` names none."""
    ref = mapping(mapping(kustomization.get("spec")).get("sourceRef"))
    own = str(mapping(kustomization.get("metadata")).get("namespace", ""))
    return SourceRef(
        str(ref.get("kind", "")), str(ref.get("namespace") or own), str(ref.get("name", ""))
    )


def flux_permissions(ref: ApplierRef, source: SourceRef) -> list[Permission]:
    """What we must be allowed to do to stamp either object (O4: get and patch, no more)."""
    return [
        Permission(verb, group, resource, namespace, name)
        for group, resource, namespace, name in (
            (FLUX_KUSTOMIZE_GROUP, "kustomizations", ref.namespace, ref.name),
            (FLUX_SOURCE_GROUP, "gitrepositories", source.namespace, source.name),
        )
        for verb in ("get", "patch")
    ]


def normalise_path(path: str) -> str:
    """A folder as both sides spell it: no ``./``, no surrounding ``/``; the root is ""."""
    return posixpath.normpath("/" + path.strip()).strip("/")


def covers(kustomization_path: str, target_path: str) -> bool:
    """The Kustomization's folder is the GitTarget's folder or one of its parents."""
    outer, inner = normalise_path(kustomization_path), normalise_path(target_path)
    return not outer or inner == outer or inner.startswith(outer + "/")


def followed_ref(source: Raw) -> str:
    """What a GitRepository follows, by Flux's precedence: commit > name > semver > tag > branch.

    A branch is reported as ``refs/heads/<branch>`` (absent: ``master``, F2), a full ref as
    itself, anything else as ``<field> <value>``; a commit pins the source, even with a branch.
    """
    ref = mapping(mapping(source.get("spec")).get("ref"))
    if ref.get("commit"):
        return f"commit {ref['commit']}"
    if ref.get("name"):
        return str(ref["name"])
    for field in ("semver", "tag"):
        if ref.get(field):
            return f"{field} {ref[field]}"
    return f"refs/heads/{ref.get('branch') or FLUX_DEFAULT_BRANCH}"


def _interval_s(source: Raw) -> float | None:
    try:
        return parse_duration(str(mapping(source.get("spec")).get("interval", ""))).total_seconds()
    except DurationError:
        return None


def denied(needed: list[Permission], allowed: Mapping[Permission, bool]) -> Wanted | None:
    """AccessDenied naming what of ``needed`` we may not do, or None when we may do all."""
    missing = [p.describe() for p in needed if not allowed.get(p, False)]
    if not missing:
        return None
    return misconfigured(ACCESS_DENIED, "not allowed to " + ", ".join(missing))


def source_problem(ref: SourceRef, source: Raw | None, url: str, branch: str) -> Problem | None:
    """Does a Kustomization's source follow this repository and branch? (S2 and D4, once).

    ApplierConfigured and the dispatcher's last look before a stamp both ask this, so they
    can never disagree (they did: audit D4). The source must be a GitRepository that exists,
    on ``url`` once both are normalised, following ``refs/heads/<branch>`` by Flux's own
    precedence (``followed_ref``, appliers.md F2): a pinned commit, tag or semver range is a
    mismatch even with the branch beside it, and a source without ``spec.ref`` follows
    ``master``. None when it does.
    """
    where = f"{ref.namespace}/{ref.name}"
    if ref.kind != "GitRepository":
        return Problem(
            SOURCE_MISMATCH,
            f"the Kustomization reads a {ref.kind or '(no kind)'} {where}, not a GitRepository",
        )
    if source is None:
        return Problem(APPLIER_NOT_FOUND, f"GitRepository {where} not found")
    followed_url = str(mapping(source.get("spec")).get("url", ""))
    follows = followed_ref(source)
    if normalise_url(followed_url) != normalise_url(url):
        return Problem(
            SOURCE_MISMATCH, f"GitRepository {where} follows {followed_url} ({follows}), not {url}"
        )
    if follows != f"refs/heads/{branch}":
        return Problem(
            SOURCE_MISMATCH, f"GitRepository {where} follows {follows}, not branch {branch}"
        )
    return None


def _flux_source(subject: Subject, ref: SourceRef, source: Raw | None) -> Wanted | None:
    problem = source_problem(ref, source, subject.url, subject.branch)
    return None if problem is None else misconfigured(problem.reason, problem.message)


def _flux_timing_and_path(
    subject: Subject, ref: SourceRef, found: FluxFound, min_interval_s: float
) -> Wanted | None:
    source, kustomization = mapping(found.source), mapping(found.kustomization)
    interval = _interval_s(source)
    if interval is None or interval < min_interval_s:
        shown = mapping(source.get("spec")).get("interval", "")
        return misconfigured(
            SOURCE_FETCHES_ON_ITS_OWN,
            f"GitRepository {ref.namespace}/{ref.name} fetches every {shown}: set "
            f"spec.interval to at least {_shown_duration(min_interval_s)} so that it fetches "
            "when asked",
        )
    path = str(mapping(kustomization.get("spec")).get("path") or "")
    if not covers(path, subject.path):
        return misconfigured(
            PATH_NOT_COVERED,
            f"the Kustomization applies {path or './'}, which "
            f"does not hold the GitTarget's path {subject.path}",
        )
    return None


def check_flux(subject: Subject, found: FluxFound, min_interval_s: float) -> Wanted:
    """ApplierConfigured for a Kustomization and its GitRepository."""
    ref = subject.applier
    if found.kustomization is None:
        return misconfigured(
            APPLIER_NOT_FOUND, f"Kustomization {ref.namespace}/{ref.name} not found"
        )
    source = source_ref(found.kustomization)
    problem = (
        _flux_source(subject, source, found.source)
        or _flux_timing_and_path(subject, source, found, min_interval_s)
        or denied(flux_permissions(ref, source), found.allowed)
    )
    return problem or configured(subject)


def _shown_duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"
