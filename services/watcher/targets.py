"""GitTargets: validate, report, and publish the config the branch workers read.

For every GitTarget the watcher decides ``Validated`` (``shared.decide.targets``), reflects a
standing refusal as ``GitPathAccepted=False`` (the branch worker records it with
``ConfigStore.set_refusal``), checks its applier (``ApplierConfigured``, S2, through
``services.watcher.appliers``; a configuration error stalls it), writes the Ready trio, and
records an Event when Ready moves.
A valid GitTarget is *served*: its ``TargetConfig`` and its branch's ``BranchConfig`` are
published together, in one transaction, before any of its watches start, so a branch worker
never finds a branch without the GitTargets that write to it (it retires a branch that has
none). A GitTarget that stops being valid is withdrawn (``ConfigStore.withdraw_target``): its
watches stop, its settings go, and the branch worker drops its events unwritten. One whose
only problem is its signing key (P6) is not served either (``Validated=False``, its watches
stop), but stays registered with its branch, published with ``key_held``: the branch is never
retired under its held writes, and whoever owns the branch, a new owner too, keeps them pending
until the key works and the GitTarget is served again.
When several GitProviders point at one branch (the same repository URL and branch), one of
them holds it and sets its writer (``shared.decide.claims``, T1): the branch is published with
that GitProvider's settings, and only GitTargets whose GitProvider has the same writer are
served; the others are refused with ``Validated=False`` (``BranchHeldByAnotherProvider``), so
nobody pushes with another's Secret or commits as another's committer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from services.watcher.appliers import ApplierChecker, ApplierWorld, CheckJob, plan_check
from services.watcher.clusters import ClusterState
from services.watcher.gittarget_metrics import TargetRow
from services.watcher.providers import ProviderKey
from services.watcher.published import branch_config, branch_configs, target_config
from services.watcher.status import StatusPublisher
from services.watcher.target_health import HealthView, ready_message, row_of
from shared.decide.claims import BRANCH_HELD, Candidate, held_message, writers
from shared.decide.conditions import Problem, Wanted
from shared.decide.targets import (
    APPLIER_CONFIGURED,
    Surroundings,
    TargetFindings,
    Verdict,
    commit_template_problem,
    target_conditions,
    validate,
)
from shared.decide.watches import ServedTarget
from shared.kube.kinds import GIT_TARGETS
from shared.model.config import TargetConfig
from shared.model.crds import ClusterProviderView, Condition, GitProviderView, GitTargetView
from shared.model.ids import Branch, BranchKey, GitTargetUid
from shared.store.config import ConfigStore, RefusalReader
from shared.store.target_health import Observed
from shared.store.watches import WatchState


@dataclass(frozen=True, slots=True)
class World:
    """What a reconcile pass read, indexed the way GitTargets refer to it."""

    providers: Mapping[ProviderKey, GitProviderView]
    provider_problems: Mapping[ProviderKey, list[Problem]]
    clusters: Mapping[str, ClusterProviderView]
    cluster_states: Mapping[str, ClusterState]
    namespace_labels: Mapping[str, dict[str, str]]
    #: Branches that cannot push or start, as their GitTargets show it (T4).
    branch_stalls: Mapping[BranchKey, Problem] = field(default_factory=dict)
    #: GitTargets (by uid) whose signing key cannot be used (P6, ``services.watcher.signing``).
    signing_problems: Mapping[str, Verdict] = field(default_factory=dict)


def _validated(target: GitTargetView, world: World) -> Verdict:
    """The GitTarget's verdict on everything but its signing key."""
    ns = target.meta.namespace
    around = Surroundings(
        provider=world.providers.get((ns, target.provider)),
        cluster=world.clusters.get(target.cluster_provider),
        namespace_labels=world.namespace_labels.get(ns, {}),
    )
    return validate(target, around)


def verdict_of(target: GitTargetView, world: World) -> Verdict:
    """The GitTarget's validation verdict."""
    verdict = _validated(target, world)
    if verdict.valid:
        return world.signing_problems.get(target.meta.uid, verdict)
    return verdict


def held_for_key(target: GitTargetView, world: World) -> bool:
    """P6: the GitTarget's only problem is its signing key (it keeps its place on its branch)."""
    return target.meta.uid in world.signing_problems and _validated(target, world).valid


def _contested(candidates: list[Candidate]) -> set[BranchKey]:
    """Branches with GitTargets of more than one writer."""
    named: dict[BranchKey, set[str]] = {}
    for c in candidates:
        named.setdefault(c.branch, set()).add(c.writer)
    return {bk for bk, found in named.items() if len(found) > 1}


def _as_condition(wanted: Wanted | None) -> Condition | None:
    if wanted is None:
        return None
    return Condition(wanted.type, wanted.status, wanted.reason, wanted.message)


class TargetReconciler:
    """Status and config publication for GitTargets."""

    def __init__(
        self,
        config: ConfigStore,
        state: WatchState,
        status: StatusPublisher,
        checker: ApplierChecker,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._state = state
        self._status = status
        self._checker = checker
        self._health = HealthView(config.target_health(), clock)
        #: Each GitTarget as the last pass left it, for the GitTarget metrics.
        self.rows: list[TargetRow] = []
        self._published: dict[str, str] = {}  # Redis key -> JSON last published by us
        self._withdrawn: set[str] = set()  # uids withdrawn while invalid, not asked again
        self._refusals = RefusalReader(config)  # one read a pass while none moves

    def forget_published(self) -> None:
        """Redis lost what was published (C8): publish everything again on this pass."""
        self._published.clear()
        self._withdrawn.clear()
        self._refusals = RefusalReader(self._config)
        self._health.forget()

    def reconcile(self, targets: list[GitTargetView], world: World) -> list[ServedTarget]:
        """Write every GitTarget's status; publish and return the served ones (those held for
        their signing key are published too, marked, but not returned: they have no watches)."""
        served: list[tuple[GitTargetView, GitProviderView]] = []
        keyed: list[tuple[GitTargetView, GitProviderView]] = []
        verdicts = {t.meta.uid: verdict_of(t, world) for t in targets}
        on_key = {t.meta.uid for t in targets if held_for_key(t, world)}
        refused, kept = self._hold_branches(targets, verdicts, on_key, world)
        verdicts.update(refused)
        appliers = self._check_appliers(targets, verdicts, world)
        refusals = self._refusals.first_refusals([t.uid for t in targets])
        observed = self._observe(targets, world)
        rows: list[TargetRow] = []
        for target in targets:
            verdict = verdicts[target.meta.uid]
            refusal = refusals.get(target.uid)
            seen = observed.get(target.uid, Observed())
            wanted = self._report(
                target, verdict, world, appliers[target.meta.uid], refusal, seen=seen
            )
            rows.append(row_of(target, wanted, seen))
            provider = world.providers.get((target.meta.namespace, target.provider))
            if provider is None:
                continue
            if verdict.valid:
                served.append((target, provider))
            elif target.meta.uid in kept:
                keyed.append((target, provider))
        self.rows = rows
        self._publish(served, keyed, world.clusters)
        published = {t.meta.uid for t, _ in served} | {t.meta.uid for t, _ in keyed}
        self._withdraw({t.meta.uid for t in targets} - published)
        return [
            ServedTarget(target, Branch(provider.url, target.branch).key)
            for target, provider in served
        ]

    def _hold_branches(
        self,
        targets: list[GitTargetView],
        verdicts: Mapping[str, Verdict],
        on_key: set[str],
        world: World,
    ) -> tuple[dict[str, Verdict], set[str]]:
        """T1: the refusals of valid GitTargets whose branch another GitProvider holds, and
        which of the GitTargets held for their signing key (``on_key``, P6) keep their place
        on their branch: those of its writer. They never take a branch from a valid
        GitTarget's GitProvider; a branch only they name is held by one of theirs."""
        found: dict[str, tuple[BranchKey, str, str]] = {}
        candidates: list[Candidate] = []
        spare: list[Candidate] = []
        for target in targets:
            key = (target.meta.namespace, target.provider)
            provider = world.providers.get(key)
            uid = target.meta.uid
            if provider is None or not (verdicts[uid].valid or uid in on_key):
                continue
            config = branch_config(provider, target.branch)
            found[uid] = (config.ref.key, config.writer, provider.url)
            access = not any(p.permanent for p in world.provider_problems.get(key, ()))
            candidate = Candidate(config.ref.key, key, config.writer, access)
            (spare if uid in on_key else candidates).append(candidate)
        current: dict[BranchKey, ProviderKey] = {}
        for bk in _contested(candidates + spare):  # only those need to know who holds them now
            published = self._config.branch(bk)
            if published is not None:
                current[bk] = (published.provider_namespace, published.provider_name)
        held = writers(candidates, current)
        held.update(writers([c for c in spare if c.branch not in held], current))
        by_uid = {t.meta.uid: t for t in targets}
        refused = {
            uid: Verdict(BRANCH_HELD, held_message(by_uid[uid].branch, url))
            for uid, (bk, writer, url) in found.items()
            if held[bk] != writer and uid not in on_key
        }
        kept = {
            uid for uid, (bk, writer, _) in found.items() if uid in on_key and held[bk] == writer
        }
        return refused, kept

    def _check_appliers(
        self, targets: list[GitTargetView], verdicts: Mapping[str, Verdict], world: World
    ) -> dict[str, Wanted | None]:
        """ApplierConfigured of every GitTarget (None: it names no applier), S2."""
        where = ApplierWorld(world.clusters, world.cluster_states, world.namespace_labels)
        planned: dict[str, Wanted | CheckJob | None] = {}
        for target in targets:
            provider = world.providers.get((target.meta.namespace, target.provider))
            url = provider.url if provider is not None else None
            planned[target.meta.uid] = plan_check(target, verdicts[target.meta.uid], url, where)
        jobs = {uid: job for uid, job in planned.items() if isinstance(job, CheckJob)}
        checked = self._checker.run(jobs)
        return {
            uid: checked[uid] if isinstance(plan, CheckJob) else plan
            for uid, plan in planned.items()
        }

    def _report(
        self,
        target: GitTargetView,
        verdict: Verdict,
        world: World,
        applier: Wanted | None,
        refusal: dict[str, str] | None,
        *,
        seen: Observed,
    ) -> list[Wanted]:
        ns = target.meta.namespace
        cluster = world.cluster_states.get(target.cluster_provider)
        provider = world.providers.get((ns, target.provider))
        stall = None
        if provider is not None and world.branch_stalls:
            stall = world.branch_stalls.get(Branch(provider.url, target.branch).key)
        findings = TargetFindings(
            verdict=verdict,
            refusal=refusal,
            cluster_problem=cluster.problem if cluster else None,
            provider_problems=tuple(world.provider_problems.get((ns, target.provider), ())),
            applier=_as_condition(applier),
            branch_stall=stall,
            template_problem=commit_template_problem(target),
            suspended=target.controls.suspended,
            reconcile_problem=target.controls.reconcile_problem,
        )
        wanted = target_conditions(findings, ready_message(target, seen))
        drop: tuple[str, ...] = ()
        if applier is None:
            drop = (APPLIER_CONFIGURED,)
        else:
            wanted.append(applier)
        self._status.publish(GIT_TARGETS, target.meta, target.conditions, wanted, True, drop=drop)
        return wanted

    def _observe(self, targets: list[GitTargetView], world: World) -> dict[GitTargetUid, Observed]:
        """The last push, apply counts and oldest unpushed write of every GitTarget whose
        GitProvider exists (so its branch is known), read where they changed (``HealthView``)."""
        found: list[tuple[GitTargetUid, BranchKey]] = []
        for target in targets:
            provider = world.providers.get((target.meta.namespace, target.provider))
            if provider is not None:
                found.append((target.uid, Branch(provider.url, target.branch).key))
        return self._health.observe(found)

    def _publish(
        self,
        served: list[tuple[GitTargetView, GitProviderView]],
        keyed: list[tuple[GitTargetView, GitProviderView]],
        clusters: Mapping[str, ClusterProviderView],
    ) -> None:
        """Publish each branch with those of its GitTargets whose settings changed (``keyed``:
        held for their signing key, published with ``key_held``, P6); a branch no longer served
        is forgotten here, so it is published again if it comes back (its owner retires its
        keys meanwhile)."""
        configs = [
            target_config(target, provider, clusters.get(target.cluster_provider))
            for target, provider in served
        ]
        configs += [
            replace(target_config(t, provider, clusters.get(t.cluster_provider)), key_held=True)
            for t, provider in keyed
        ]
        by_branch: dict[str, list[TargetConfig]] = {}
        for config in configs:  # the key hashes the URL: computed once per GitTarget
            by_branch.setdefault(config.ref.key, []).append(config)
        branches = branch_configs([*served, *keyed])
        for bk, branch in branches.items():
            changed = [
                c for c in by_branch.get(bk, []) if self._changed(f"target:{c.uid}", c.to_json())
            ]
            if self._changed(f"branch:{bk}", branch.to_json()) or changed:
                self._config.publish_served(branch, changed)
            for config in changed:
                self._state.mark_published(config.uid)
        for key in [k for k in self._published if k.startswith("branch:")]:
            if key.removeprefix("branch:") not in branches:
                del self._published[key]
        self._withdrawn -= {c.uid for c in configs}

    def _withdraw(self, unserved: set[str]) -> None:
        """Withdraw the settings of published GitTargets that exist but are not valid now."""
        todo = unserved - self._withdrawn
        if not todo:
            return
        published = self._state.published_targets()
        for uid in sorted(todo):
            if uid in published:
                self._config.withdraw_target(GitTargetUid(uid))
            self._published.pop(f"target:{uid}", None)
            self._withdrawn.add(uid)

    def _changed(self, key: str, text: str) -> bool:
        if self._published.get(key) == text:
            return False
        self._published[key] = text
        return True

    def forget_gone(self, live: frozenset[str], busy: set[GitTargetUid]) -> list[GitTargetUid]:
        """Forget GitTargets not in ``live`` (by uid) whose watches have all ended.

        ``ConfigStore.forget_uid`` drops their config, refusal, cursors and ledger (a withdrawn
        GitTarget has no config left, so it goes by uid); a watch still ending could write a
        cursor after that, so those wait for the next pass.
        """
        published = self._state.published_targets()
        gone = sorted(uid for uid in published if uid not in live and uid not in busy)
        for uid in gone:
            self._config.forget_uid(uid)
            self._state.unmark(uid)
            self._published.pop(f"target:{uid}", None)
            self._withdrawn.discard(uid)
        return gone
