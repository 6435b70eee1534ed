"""``ApplierConfigured`` (S2) for an Argo CD Application, and the rule the dispatcher applies
before it sets an operation (D5): the pure half of the check, in the order of the Flux check
(``applier_check.py``, whose conditions, subjects and permissions it shares).

Facts: appliers.md A1. The Application exists, has one source (``spec.source``; a non-empty
``spec.sources`` or a ``spec.sourceHydrator`` wins over it) on this repository with
``targetRevision`` the branch, automated sync is off (``automated`` absent or
``enabled: false``), its ``spec.source.path`` covers the GitTarget's path, and we may get and
update it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.decide.applier_check import (
    APPLIER_NOT_FOUND,
    ARGO_GROUP,
    AUTOMATED_SYNC_ENABLED,
    PATH_NOT_COVERED,
    SOURCE_MISMATCH,
    Permission,
    Problem,
    Raw,
    Subject,
    configured,
    covers,
    denied,
    mapping,
    misconfigured,
)
from shared.decide.conditions import Wanted
from shared.model.config import ApplierRef
from shared.model.ids import normalise_url


@dataclass(frozen=True, slots=True)
class ArgoFound:
    """What the watcher read for an Application (None: not found)."""

    application: Raw | None
    allowed: Mapping[Permission, bool]


def argo_permissions(ref: ApplierRef) -> list[Permission]:
    """What we must be allowed to do to set an Application's operation (get, update)."""
    return [
        Permission(verb, ARGO_GROUP, "applications", ref.namespace, ref.name)
        for verb in ("get", "update")
    ]


def _argo_source(where: str, spec: Raw, url: str, branch: str) -> Problem | None:
    if spec.get("sources") or spec.get("sourceHydrator"):
        return Problem(
            SOURCE_MISMATCH,
            f"Application {where} has several sources (or a "
            "hydrator); it must sync from a single spec.source",
        )
    source = mapping(spec.get("source"))
    repo = str(source.get("repoURL", ""))
    revision = str(source.get("targetRevision") or "HEAD")
    if normalise_url(repo) != normalise_url(url):
        return Problem(SOURCE_MISMATCH, f"Application {where} syncs {repo} ({revision}), not {url}")
    if revision not in (branch, f"refs/heads/{branch}"):
        return Problem(
            SOURCE_MISMATCH, f"Application {where} syncs revision {revision}, not branch {branch}"
        )
    return None


def automated_sync(spec: Raw) -> bool:
    """Argo CD's IsAutomatedSyncEnabled: ``automated`` set, ``enabled`` not false.

    Facts: appliers.md A1.
    """
    automated = mapping(spec.get("syncPolicy")).get("automated")
    if not isinstance(automated, Mapping):
        return False
    return automated.get("enabled") is not False


def application_problem(application: Raw, url: str, branch: str) -> Problem | None:
    """Does an Application sync this repository and branch, and only when asked? (S2 and D5).

    ApplierConfigured and the dispatcher's read before it sets an operation both ask this, so
    an attempt never asks an Application the check would stall: a single ``spec.source``
    (appliers.md A1: a non-empty ``spec.sources`` or a ``spec.sourceHydrator`` wins over it)
    on ``url`` once both are normalised, ``targetRevision`` the branch or
    ``refs/heads/<branch>`` (omitted means HEAD, not a branch), and automated sync off.
    """
    meta = mapping(application.get("metadata"))
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    spec = mapping(application.get("spec"))
    problem = _argo_source(where, spec, url, branch)
    if problem is None and automated_sync(spec):
        problem = Problem(
            AUTOMATED_SYNC_ENABLED,
            f"Application {where} syncs by itself: "
            "remove spec.syncPolicy.automated or set its enabled: false",
        )
    return problem


def check_argo(subject: Subject, found: ArgoFound) -> Wanted:
    """ApplierConfigured for an Argo CD Application.

    In the order of the Flux check: the source, then whether it applies on its own
    (``application_problem``), then the folder (``spec.source.path`` must cover the
    GitTarget's path, as a Kustomization's must: behaviour.md is silent on the Argo CD path,
    and a request to an Application that does not apply the folder could revert nothing),
    then access.
    """
    ref = subject.applier
    where = f"{ref.namespace}/{ref.name}"
    if found.application is None:
        return misconfigured(APPLIER_NOT_FOUND, f"Application {where} not found")
    problem = application_problem(found.application, subject.url, subject.branch)
    if problem is not None:
        return misconfigured(problem.reason, problem.message)
    path = str(mapping(mapping(found.application.get("spec")).get("source")).get("path") or "")
    if not covers(path, subject.path):
        return misconfigured(
            PATH_NOT_COVERED,
            f"Application {where} applies {path or './'}, which "
            f"does not hold the GitTarget's path {subject.path}",
        )
    return denied(argo_permissions(ref), found.allowed) or configured(subject)
