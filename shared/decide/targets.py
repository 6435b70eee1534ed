"""Whether a GitTarget may be served: its GitProvider, branch, path and cluster (``Validated``).

A GitTarget is served (its watches run, its config is published) only when every check
passes; the first failing check names the reason, so a person fixes one thing at a time in the
order the checks run: the GitProvider exists and has no credentials in its URL (T3), the
branch matches its ``allowedBranches``, the path stays inside the repository, ``spec.applier``
names exactly one applier (the CRD's CEL rule, checked again), the ClusterProvider
exists and admits the namespace.

Its conditions follow from that verdict and from what others report: a standing refusal
(``GitPathAccepted=False``, M10) stalls it, as does an ``ApplierConfigured=False``; a
GitProvider or cluster that is not ready yet, or an applier check that reached no verdict
(``ApplierConfigured=Unknown``), keeps it Reconciling. A refused sensitive object is the
exception: a WatchRule selected it, and that WatchRule shows the problem with its fix, so the
GitTarget stays Ready while it mirrors the rest (``GitPathAccepted=False`` still says so). A
reference to an object that does not exist yet never stalls (``shared.decide.conditions``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from shared.decide.conditions import SUCCEEDED, Problem, Wanted, trio
from shared.decide.globs import branch_allowed
from shared.decide.selectors import admits
from shared.decide.urls import CREDENTIALS_IN_URL, has_credentials
from shared.decide.watches import SENSITIVE_RESOURCE
from shared.model import templates
from shared.model.crds import ClusterProviderView, Condition, GitProviderView, GitTargetView

PROVIDER_NOT_FOUND = "ProviderNotFound"
BRANCH_NOT_ALLOWED = "BranchNotAllowed"
INVALID_PATH = "InvalidPath"
CLUSTER_PROVIDER_NOT_FOUND = "ClusterProviderNotFound"
NOT_ADMITTED = "NotAdmitted"
INVALID_APPLIER = "InvalidApplier"
#: spec.encryption names no usable age recipient (P3).
INVALID_ENCRYPTION = "InvalidEncryption"
#: spec.placement cannot place files (a template the CRD's rules refuse, issue 27).
INVALID_PLACEMENT = "InvalidPlacement"
#: spec.commit.window cannot be used (issue 27.7).
INVALID_COMMIT = "InvalidCommitSettings"
#: The branch worker's reason for a template it cannot use (its commits take the fallback).
INVALID_COMMIT_TEMPLATE = "InvalidCommitTemplate"
#: spec.onRefusal PushEmptyCommit next to a spec.applier (the CRD's CEL rule again, P11).
INVALID_ON_REFUSAL = "InvalidOnRefusal"
#: P7: spec.suspend is true (Ready stays True: nothing is wrong, nothing is written).
SUSPENDED = "Suspended"
SUSPENDED_MESSAGE = (
    "spec.suspend is true: nothing is written to Git and no applier is asked; the watches keep "
    "collecting, and what changes meanwhile is committed when it is set back to false"
)
#: P8: the reconcile annotation's value cannot be handled (too long for status).
INVALID_RECONCILE_REQUEST = "InvalidReconcileRequest"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of validating one GitTarget: ``reason`` is empty when it is valid."""

    reason: str = ""
    message: str = ""

    @property
    def valid(self) -> bool:
        """True when every check passed."""
        return not self.reason


def path_problem(path: str) -> str:
    """Why ``path`` cannot be a GitTarget folder, or "" when it can."""
    if not path or path.strip() != path:
        return "spec.path must be a non-empty relative path without surrounding spaces"
    if path.startswith("/") or "\\" in path or "\0" in path:
        return "spec.path must be relative to the repository root (no leading /, no \\)"
    segments = path.split("/")
    if ".." in segments:
        return "spec.path must stay inside the repository: no '..' segment"
    if ".git" in segments:
        return "spec.path must not name git's own .git folder"
    return ""


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What a GitTarget refers to, as found in the cluster (None when missing)."""

    provider: GitProviderView | None
    cluster: ClusterProviderView | None
    namespace_labels: Mapping[str, str]


def validate(target: GitTargetView, around: Surroundings) -> Verdict:
    """The first check that fails, or a valid verdict."""
    ns, spec_name = target.meta.namespace, target.provider
    if around.provider is None:
        return Verdict(PROVIDER_NOT_FOUND, f"GitProvider {ns}/{spec_name} not found")
    if has_credentials(around.provider.url):
        return Verdict(
            CREDENTIALS_IN_URL,
            f"GitProvider {ns}/{spec_name} has credentials in spec.url; they belong in its Secret",
        )
    if not branch_allowed(target.branch, around.provider.allowed_branches):
        allowed = ", ".join(around.provider.allowed_branches)
        return Verdict(
            BRANCH_NOT_ALLOWED,
            f"branch {target.branch!r} matches none of the GitProvider's allowedBranches "
            f"({allowed})",
        )
    problem = path_problem(target.path)
    if problem:
        return Verdict(INVALID_PATH, problem)
    if target.applier_problem:
        return Verdict(INVALID_APPLIER, target.applier_problem)
    if target.on_refusal == "PushEmptyCommit" and target.applier is not None:
        return Verdict(
            INVALID_ON_REFUSAL,
            "spec.onRefusal PushEmptyCommit is for a GitTarget without spec.applier; with an "
            "applier use Reapply",
        )
    if target.encryption is not None and target.encryption.problem:
        return Verdict(INVALID_ENCRYPTION, target.encryption.problem)
    if target.placement.problem:
        return Verdict(INVALID_PLACEMENT, target.placement.problem)
    if target.commit.problem:
        return Verdict(INVALID_COMMIT, target.commit.problem)
    if around.cluster is None:
        return Verdict(
            CLUSTER_PROVIDER_NOT_FOUND, f"ClusterProvider {target.cluster_provider} not found"
        )
    if not admits(around.cluster.access_from, ns, around.namespace_labels):
        return Verdict(
            NOT_ADMITTED,
            f"ClusterProvider {target.cluster_provider} does not admit namespace {ns} "
            "(spec.accessFrom)",
        )
    return Verdict()


def commit_template_problem(target: GitTargetView) -> Problem | None:
    """Why the GitTarget's liveTemplate or reconcileTemplate cannot be used (None: they can)."""
    commit = target.commit
    for template, variables in (
        (commit.live_template, templates.LIVE),
        (commit.reconcile_template, templates.RECONCILE),
    ):
        if not template:
            continue
        try:
            templates.check(template, variables)
        except templates.TemplateError as err:
            return Problem(INVALID_COMMIT_TEMPLATE, f"spec.commit.message.{err}")
    return None


VALIDATED = "Validated"
GIT_PATH_ACCEPTED = "GitPathAccepted"
APPLIER_CONFIGURED = "ApplierConfigured"
ACCEPTED = "Accepted"
REFUSED = "Refused"
GIT_PROVIDER_NOT_READY = "GitProviderNotReady"
#: The condition reason pattern of the CRDs (metav1.Condition's).
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


@dataclass(frozen=True, slots=True)
class TargetFindings:
    """Everything a reconcile learned about one GitTarget."""

    verdict: Verdict
    refusal: Mapping[str, str] | None  # the standing refusal (M10), if any
    cluster_problem: Problem | None  # its ClusterProvider's problem, if any
    provider_problems: tuple[Problem, ...]  # its GitProvider's problems
    applier: Condition | None = None  # ApplierConfigured, written by whoever checks it
    branch_stall: Problem | None = None  # its branch cannot push or start (T4), if so
    #: Its spec.commit.message templates cannot be used (issue 27.7; its commits fall back
    #: to the GitProvider's wording meanwhile, C1).
    template_problem: Problem | None = None
    suspended: bool = False  # spec.suspend (P7)
    reconcile_problem: str = ""  # why its reconcile request cannot be handled (P8)


def _refusal_reason(refusal: Mapping[str, str]) -> str:
    reason = str(refusal.get("reason", ""))
    return reason if _REASON.match(reason) else REFUSED


def _problems(found: TargetFindings) -> list[Problem]:
    problems: list[Problem] = []
    if not found.verdict.valid:
        problems.append(Problem(found.verdict.reason, found.verdict.message))
    if found.refusal is not None and found.refusal.get("reason") != SENSITIVE_RESOURCE:
        reason = _refusal_reason(found.refusal)
        problems.append(Problem(reason, str(found.refusal.get("message", ""))))
    if found.applier is not None and found.applier.status == "False":
        problems.append(Problem(found.applier.reason, found.applier.message))
    if found.verdict.valid and found.cluster_problem is not None:
        problems.append(found.cluster_problem)
    if found.verdict.valid and found.provider_problems:
        first = found.provider_problems[0]
        message = f"GitProvider is not ready: {first.reason}: {first.message}"
        problems.append(Problem(GIT_PROVIDER_NOT_READY, message, permanent=False))
    if found.verdict.valid and found.branch_stall is not None:
        problems.append(found.branch_stall)
    if found.verdict.valid and found.template_problem is not None:
        problems.append(found.template_problem)
    if found.applier is not None and found.applier.status == "Unknown":
        problems.append(Problem(found.applier.reason, found.applier.message, permanent=False))
    if found.reconcile_problem:
        problems.append(Problem(INVALID_RECONCILE_REQUEST, found.reconcile_problem))
    return problems


def target_conditions(found: TargetFindings, ready_message: str = "") -> list[Wanted]:
    """Validated, GitPathAccepted and the Ready/Reconciling/Stalled trio of a GitTarget
    (``ready_message``: what a Ready one last did)."""
    verdict = found.verdict
    validated = (
        Wanted(VALIDATED, "True", SUCCEEDED, "")
        if verdict.valid
        else Wanted(VALIDATED, "False", verdict.reason, verdict.message)
    )
    accepted = (
        Wanted(GIT_PATH_ACCEPTED, "True", ACCEPTED, "")
        if found.refusal is None
        else Wanted(
            GIT_PATH_ACCEPTED,
            "False",
            _refusal_reason(found.refusal),
            str(found.refusal.get("message", "")),
        )
    )
    if found.suspended:
        return [validated, accepted, *trio(_problems(found), SUSPENDED_MESSAGE, SUSPENDED)]
    return [validated, accepted, *trio(_problems(found), ready_message)]
