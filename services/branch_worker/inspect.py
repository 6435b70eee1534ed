"""``python -m services.branch_worker inspect``: each branch's state and each applier's debts (O3).

For every branch with work: its repository and branch, its owner, the observed tip, whether it
is quiet (and if not, why), and for every applier its GitTargets name: what it is owed, the
attempt out, its backoff, and what the decision rule says it is waiting for now; and the
branch's latest apply-window collisions (W3): what was withheld or judged ambiguous, and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from services.branch_worker.worker import Stores
from shared.decide.obligations import Ask, decide
from shared.decide.quiet import BranchView, busy_reasons
from shared.model.appliers import Applier
from shared.model.config import ApplierRef, appliers_of
from shared.model.ids import BranchKey


def _applier_lines(ref: ApplierRef, applier: Applier, view: BranchView, now: float) -> list[str]:
    owed = applier.owes()
    lines = [f"  applier {ref.kind} {ref.namespace}/{ref.name} (cluster {ref.cluster_provider})"]
    if not owed:
        lines.append("    owed: nothing")
    for reason, uids in owed.items():
        commit = {"ForeignCommit": applier.foreign_commit, "CatchUp": applier.catch_up}.get(reason)
        at = f" at {commit[:12]}" if commit else ""
        lines.append(f"    owed: {reason}{at} for GitTarget uid(s) {', '.join(sorted(uids))}")
    if applier.attempt:
        a = applier.attempt
        lines.append(
            f"    attempt out: token {a.token} at {a.commit[:12]}, "
            f"handed back in {max(a.deadline - now, 0):.0f}s"
        )
    if applier.failures:
        lines.append(
            f"    backoff: {applier.failures} failure(s), next try in "
            f"{max(applier.next_try_at - now, 0):.0f}s"
        )
    decision = decide(applier, view, now)
    if isinstance(decision, Ask):
        lines.append(f"    next: ask now ({'+'.join(decision.reasons)} at {decision.commit[:12]})")
    else:
        until = f" (until {decision.until - now:.0f}s from now)" if decision.until else ""
        lines.append(f"    next: wait: {decision.why}{until}")
    return lines


def report(stores: Stores, clock: Callable[[], float] = time.time) -> str:
    """The whole report as text."""
    now = clock()
    out: list[str] = []
    for bk in stores.registry.branches():
        out += _branch(bk, stores, now)
    return "\n".join(out) if out else "no branches"


def _branch(bk: BranchKey, stores: Stores, now: float) -> list[str]:
    configs, leases = stores.configs, stores.leases
    config = configs.branch(bk)
    state = stores.states.read(bk)
    view = state.view()
    where = f"{config.url} {config.branch}" if config else "(settings not published)"
    busy = busy_reasons(view)
    quiet = f"busy: {', '.join(busy)}" if busy else "quiet"
    lines = [
        f"branch {bk}: {where}",
        f"  owner {leases.holder(bk) or 'none'}, tip {(state.observed_tip or '-')[:12]}, "
        f"{quiet}, last write {now - state.last_write_at:.0f}s ago"
        if state.last_write_at
        else f"  owner {leases.holder(bk) or 'none'}, tip {(state.observed_tip or '-')[:12]}, "
        f"{quiet}, no write yet",
    ]
    for ref, targets in appliers_of(configs.targets_of(bk)).items():
        periods = {str(t.uid): t.quiet_period_s for t in targets}
        applier = stores.appliers.load(ref.key, ref.kind)
        lines += _applier_lines(ref, replace(applier, quiet_periods=periods), view, now)
    return lines + _collision_lines(stores, bk, now)


def _collision_lines(stores: Stores, bk: BranchKey, now: float) -> list[str]:
    """W3: the latest apply-window collisions, newest first."""
    return [
        f"  apply window: {c.outcome} {c.object} of GitTarget {c.gittarget} "
        f"({c.applier}, {now - c.at:.0f}s ago): {c.why}"
        for c in stores.collisions.latest(bk)
    ]
