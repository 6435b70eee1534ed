"""A dispatcher that dies at any step of an attempt loses nothing and asks nothing twice (C9).

Issue 11, C9 (dispatcher half), with D1 (one job per token, one outcome per token, never
retried by the dispatcher) and A4 (an attempt whose outcome never comes is handed back after
its deadline). Real Redis and rq, the sandbox's API server and Flux doubles, and real
dispatcher processes (``tests.integration.dispatcher.crashing``) that leave with ``os._exit``
at one step: the last read before the stamp, after the stamp before any outcome, after the
outcome is reported before rq finishes the job. The branch side is the branch worker's own
``ApplierDesk`` on an injected clock, so the deadline passes without waiting.

Each dispatcher process journals the attempts it started and the stamps it made; across every
process, a token is started at most once and stamped at most once, the Flux double applies
the commit, and the applier owes nothing at the end.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rq.registry

from services.branch_worker.applying import ApplierDesk
from shared.model.config import ApplierRef
from shared.model.ids import Branch, BranchKey, GitTargetUid
from shared.model.requests import ApplyRequest
from shared.store.appliers import ApplierStore
from shared.store.attempts import JOB_TIMEOUT_S
from tests.configs import branch_config, target_config
from tests.fixtures import process_env
from tests.integration.dispatcher import test_attempts as base
from tests.integration.dispatcher.crashing import CRASHED
from tests.integration.dispatcher.test_attempts import CM, NS, World, _quiet

pytestmark = pytest.mark.integration

KS = ApplierRef("Kustomization", NS, "apps", "default")
DEADLINE_S = 330.0
ROOT = Path(__file__).resolve().parents[3]
#: The sandbox world of the attempt tests (its API server, Git host, Flux doubles, Redis).
world = base.world


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Branchside:
    """The branch worker's applier desk for the World's branch, on a hand-driven clock."""

    world: World
    desk: ApplierDesk
    appliers: ApplierStore
    clock: Clock

    @property
    def bk(self) -> BranchKey:
        return Branch(self.world.url, self.world.branch).key

    def queued(self) -> list[ApplyRequest]:
        queue = self.world.ctx.attempts.queue()
        return [ApplyRequest.from_json(job.args[0]) for job in queue.get_jobs()]

    def owed(self) -> Any:
        return self.appliers.load(KS.key, KS.kind)


def _branchside(world: World) -> Branchside:
    uid = GitTargetUid(world.target_uid())
    world.ctx.configs.publish_target(
        target_config(
            uid, NS, "gt", world.url, world.branch, path="apps", applier=KS, on_refusal="Reapply"
        )
    )
    config = branch_config(world.url, world.branch, NS, "gp")
    clock = Clock()
    appliers = ApplierStore(world.redis, world.keys)
    desk = ApplierDesk(
        config.ref.key,
        config,
        configs=world.ctx.configs,
        appliers=appliers,
        attempts=world.ctx.attempts,
        states=world.ctx.states,
        clock=clock,
        attempt_deadline_s=DEADLINE_S,
    )
    return Branchside(world, desk, appliers, clock)


def _dispatcher(world: World, tmp: Path, step: str) -> int:
    """One dispatcher process in burst mode; its exit status."""
    kubeconfig = tmp / "kubeconfig"
    world.kube.write_kubeconfig(kubeconfig)
    settings = world.ctx.settings
    env = process_env(
        settings.key_prefix,
        redis_url=settings.redis_url,
        apply_queue=settings.apply_queue,
        kubeconfig=str(kubeconfig),
    )
    journal = tmp / "journal"
    args = [sys.executable, "-m", "tests.integration.dispatcher.crashing", step, str(journal)]
    done = subprocess.run(
        args, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, CRASHED), done.stderr[-3000:]
    return done.returncode


def _journal(tmp: Path) -> Counter[tuple[str, str]]:
    path = tmp / "journal"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter((line.split()[1], line.split()[2]) for line in lines)


def _stamp(world: World) -> str | None:
    annotations = world.source()["metadata"].get("annotations") or {}
    return annotations.get("reconcile.fluxcd.io/requestedAt")


def _abandon_started(world: World) -> None:
    """What rq does with the job of a worker that died, once its time is up: its registry
    cleanup moves it out of StartedJobRegistry (to the failed jobs), never back to the queue."""
    queue = world.ctx.attempts.queue()
    registry = rq.registry.StartedJobRegistry(queue=queue)
    registry.cleanup(timestamp=time.time() + 10 * JOB_TIMEOUT_S)  # as if its time were up
    assert registry.get_job_ids() == []


@pytest.mark.parametrize("step", ["read-tip", "stamped"])
def test_a_dispatcher_dying_before_any_outcome_is_handed_back_once(
    world: World, tmp_path: Path, step: str
) -> None:
    """C9, D1, A4: the dispatcher dies before the stamp (``read-tip``) or after it with no
    outcome reported (``stamped``). Nothing runs the token again (rq never requeues a dead
    worker's job; a second dispatcher finds the queue empty); no outcome arrives; before the
    deadline the branch worker sends nothing more (A2); at the deadline it hands the attempt
    back as Failed, and after the backoff sends exactly one new attempt, with a new token, which
    a healthy dispatcher delivers (stamping the source, or, when the dead attempt's stamp had
    Flux apply the commit already, finding it applied). Every token is started once and
    stamped at most once."""
    side = _branchside(world)
    commit = world.push("apps/cm.yaml", CM.format(v=2))
    _quiet(world, commit)
    side.desk.on_foreign(commit)
    side.desk.wake()
    (first,) = side.queued()

    assert _dispatcher(world, tmp_path, step) == CRASHED
    assert _stamp(world) == (first.token if step == "stamped" else None)
    if step == "stamped":  # the stamp stands: Flux applies the commit for the dead attempt
        world.flux.log.wait_applied(NS, "apps", f"main@sha1:{commit}", 30)
    assert world.ctx.attempts.outcomes(side.bk) == [], "no outcome from a dead dispatcher"
    _abandon_started(world)
    assert _dispatcher(world, tmp_path, "none") == 0, "the queue holds nothing to run again"

    side.clock.now += DEADLINE_S - 1
    side.desk.wake()
    assert side.queued() == [], "one attempt at a time: not before the deadline (A2)"
    side.clock.now += 1
    side.desk.wake()
    assert side.owed().attempt is None and side.owed().failures == 1, "handed back as Failed"
    for _ in range(3):  # past the first backoff, and wakes after it: one new attempt only
        side.clock.now += 60
        side.desk.wake()
    (second,) = side.queued()
    assert second.token != first.token and second.commit == commit
    assert second.reasons == first.reasons

    assert _dispatcher(world, tmp_path, "none") == 0
    outcomes = world.ctx.attempts.outcomes(side.bk)
    assert [(o.token, o.outcome) for _, o in outcomes if o] == [(second.token, "Delivered")]
    # a commit the dead attempt's stamp already had applied is not stamped again (D4)
    stamped_again = step != "stamped"
    assert _stamp(world) == (second.token if stamped_again else first.token)
    assert world.kustomization()["status"]["lastAttemptedRevision"] == f"main@sha1:{commit}"
    assert world.core.read_namespaced_config_map("app", NS).data == {"v": "2"}
    side.desk.wake()
    owed = side.owed()
    assert (owed.attempt, owed.foreign_commit, owed.failures) == (None, None, 0)
    assert side.queued() == []

    counts = _journal(tmp_path)
    assert counts[("start", first.token)] == 1 and counts[("start", second.token)] == 1
    assert counts[("stamped", first.token)] == (1 if step == "stamped" else 0)
    assert counts[("stamped", second.token)] == (1 if stamped_again else 0)
    assert sum(n for (what, _), n in counts.items() if what == "start") == 2


def test_a_dispatcher_dying_after_reporting_is_not_asked_again(
    world: World, tmp_path: Path
) -> None:
    """C9, D1, A4: the dispatcher dies after its outcome is on the branch's stream and before
    rq finishes the job. The outcome stands (one, Delivered), the job is never run again, and
    the branch worker clears the obligation: no hand-back, no new attempt, even past the
    deadline."""
    side = _branchside(world)
    commit = world.push("apps/cm.yaml", CM.format(v=3))
    _quiet(world, commit)
    side.desk.on_foreign(commit)
    side.desk.wake()
    (first,) = side.queued()

    assert _dispatcher(world, tmp_path, "reported") == CRASHED
    outcomes = world.ctx.attempts.outcomes(side.bk)
    assert [(o.token, o.outcome) for _, o in outcomes if o] == [(first.token, "Delivered")]
    _abandon_started(world)
    assert _dispatcher(world, tmp_path, "none") == 0

    side.desk.wake()
    side.clock.now += DEADLINE_S + 600
    side.desk.wake()
    owed = side.owed()
    assert (owed.attempt, owed.foreign_commit, owed.failures) == (None, None, 0)
    assert side.queued() == []
    assert _stamp(world) == first.token
    assert world.core.read_namespaced_config_map("app", NS).data == {"v": "3"}
    counts = _journal(tmp_path)
    assert counts == Counter({("start", first.token): 1, ("stamped", first.token): 1})
