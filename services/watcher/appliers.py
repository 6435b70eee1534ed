"""Running the ApplierConfigured checks (S2): read the applier's objects, under a deadline.

The rules are pure (``shared.decide.applier_check``) and each applier kind's module
(``shared.appliers``) reads what they need and asks the API server what we may do with
SelfSubjectAccessReviews, only once everything else holds. This module plans which GitTargets
get a check, hands each to its kind's ``validate`` with the client its ClusterProvider yields
(``ClientFactory.for_provider``, built by this pass's cluster reconcile), and keeps the pass's
deadline.

Nothing is read through a ClusterProvider that does not admit the GitTarget's namespace. The
checks of one pass run side by side on a small thread pool; each has ``deadline_s`` from the
moment the pass hands it in, and one that overruns reports ``Unknown``/``CheckTimedOut`` (its
thread finishes on its own, bounded by the client's request timeout, and is ignored).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from services.watcher.clusters import ClusterState
from shared.appliers import UnknownApplierKind, for_kind
from shared.decide.applier_check import (
    ACCESS_DENIED,
    CHECK_FAILED,
    CHECK_TIMED_OUT,
    NOT_CHECKED,
    Subject,
    admission,
    invalid_applier,
    unknown,
)
from shared.decide.conditions import FALSE, Wanted
from shared.decide.targets import APPLIER_CONFIGURED, Verdict
from shared.kube.api import KubeClient
from shared.kube.errors import KubeError
from shared.model.crds import ClusterProviderView, GitTargetView

#: Checks of one pass that run at once; more wait for a free thread (their deadline runs).
CHECK_THREADS = 8
#: HTTP 403: our identity may not read the applier at all.
FORBIDDEN = 403


@dataclass(frozen=True, slots=True)
class CheckJob:
    """One check to run: the GitTarget side and the client of the applier's cluster."""

    subject: Subject
    client: KubeClient


@dataclass(frozen=True, slots=True)
class ApplierWorld:
    """What planning a check needs from the pass: ClusterProviders, their clusters, labels."""

    clusters: Mapping[str, ClusterProviderView]
    cluster_states: Mapping[str, ClusterState]
    namespace_labels: Mapping[str, Mapping[str, str]]


def plan_check(
    target: GitTargetView, verdict: Verdict, url: str | None, world: ApplierWorld
) -> Wanted | CheckJob | None:
    """A check to run, a verdict reached without reading the applier, or None (no applier)."""
    if target.applier_problem:
        return invalid_applier(target.applier_problem)
    ref = target.applier
    if ref is None:
        return None
    if not verdict.valid or url is None:
        reason = verdict.reason or "GitProviderNotFound"
        return unknown(NOT_CHECKED, f"not checked while the GitTarget is not valid ({reason})")
    ns = target.meta.namespace
    subject = Subject(ns, url, target.branch, target.path, ref, target.webhook)
    cluster = world.clusters.get(ref.cluster_provider)
    problem = admission(subject, cluster, world.namespace_labels.get(ns, {}))
    if problem is not None:
        return problem
    state = world.cluster_states.get(ref.cluster_provider)
    if state is None or state.cluster is None:
        why = state.problem.message if state is not None and state.problem else "not reached"
        return unknown(CHECK_FAILED, f"applier ClusterProvider {ref.cluster_provider}: {why}")
    return CheckJob(subject, state.cluster.client)


def run_check(job: CheckJob, min_interval_s: float) -> Wanted:
    """One check by the applier's own module; an API failure is AccessDenied (403) or an
    Unknown CheckFailed, and a kind no module handles is InvalidApplier."""
    try:
        applier = for_kind(job.subject.applier.kind)
        return applier.validate(job.client, job.subject, min_interval_s)
    except UnknownApplierKind as err:
        return invalid_applier(str(err))
    except KubeError as err:
        if err.code == FORBIDDEN:
            return Wanted(APPLIER_CONFIGURED, FALSE, ACCESS_DENIED, str(err))
        return unknown(CHECK_FAILED, str(err))


class ApplierChecker:
    """Runs one pass's checks side by side, each under the deadline."""

    def __init__(self, deadline_s: float, check: Callable[[CheckJob], Wanted]) -> None:
        self._deadline_s = deadline_s
        self._check = check
        self._pool = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="applier-check")

    @classmethod
    def for_settings(cls, deadline_s: float, min_interval_s: float) -> ApplierChecker:
        """The checker the watcher runs: ``run_check`` with the minimal source interval."""
        return cls(deadline_s, functools.partial(run_check, min_interval_s=min_interval_s))

    def run(self, jobs: Mapping[str, CheckJob]) -> dict[str, Wanted]:
        """Every job's verdict, by key; one that overran its deadline is CheckTimedOut."""
        due = time.monotonic() + self._deadline_s
        futures = {key: self._pool.submit(self._check, job) for key, job in jobs.items()}
        return {key: self._result(future, due) for key, future in futures.items()}

    def _result(self, future: Future[Wanted], due: float) -> Wanted:
        try:
            return future.result(timeout=max(0.0, due - time.monotonic()))
        except FutureTimeout:
            future.cancel()
            return unknown(
                CHECK_TIMED_OUT, f"the applier check took longer than {self._deadline_s:g}s"
            )

    def close(self) -> None:
        """Stop taking checks; running ones end by themselves."""
        self._pool.shutdown(wait=False, cancel_futures=True)
