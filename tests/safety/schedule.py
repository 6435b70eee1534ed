"""A schedule: a list of numbers, each choosing the next action among those enabled now.

Hypothesis draws and shrinks the list; the world's log is the readable schedule. After the
last action the world settles: crashed processes restart, every event and webhook is
delivered, Flux and the dispatchers finish, and the clock runs until the branch is quiet and
nothing is owed; then the cluster must equal the Git tip (convergence) and Git must hold
every value once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from shared.store.keys import Keys
from tests.safety.cluster import CONSOLE, NAMES
from tests.safety.world import ACTION_S, Dispatcher, Violation, Worker, World

Action = tuple[str, Callable[[], None]]
#: Settling rounds (2 s of clock each): past the longest backoff (300 s) and attempt deadline.
SETTLE_ROUNDS = 400
SETTLE_TICK_S = 2.0


def run(choices: Sequence[int], world: World, prefix: Sequence[str] = ()) -> None:
    """Play ``prefix`` (action names), then ``choices`` against ``world``, then settle and
    check the end (raises Violation)."""
    with world.patched():
        for wanted in prefix:
            world.hooks()
            _play_named(world, wanted)
        for choice in choices:
            world.hooks()
            actions = enabled(world)
            name, act = actions[choice % len(actions)]
            world.now += ACTION_S
            world.say(f"> {name}")
            act()
            world.check_step()
        settle(world)
        world.check_end()


def run_named(
    names: Sequence[str],
    world: World,
    *,
    end: bool = True,
    then: Callable[[], None] | None = None,
) -> None:
    """Play a schedule written as action names (a regression test keeps one this way), then
    ``then`` (a measurement) inside the same seams."""
    with world.patched():
        for wanted in names:
            world.hooks()
            _play_named(world, wanted)
        if then is not None:
            then()
        if end:
            settle(world)
            world.check_end()


def _play_named(world: World, wanted: str) -> None:
    acts = dict(enabled(world))
    for d in world.dispatchers:  # "run d0": its attempt, up to a pause or its outcome
        acts[f"run {d.actor.name}"] = partial(_until_pause, world, d)
    if wanted not in acts:
        raise AssertionError(f"{wanted!r} is not enabled; enabled: {sorted(acts)}")
    world.now += ACTION_S
    world.say(f"> {wanted}")
    acts[wanted]()
    world.check_step()


def enabled(world: World) -> list[Action]:
    """The actions possible now, weighted by repetition."""
    acts: list[Action] = []
    for n in NAMES:
        acts += [(f"edit {n}", partial(world.api_edit, n))] * 2
        acts.append((f"console edit {n}", partial(world.api_edit, n, CONSOLE)))
        # also before the first fetch: the first start asks the applier (issue 23, finding 12)
        acts.append((f"outside push {n}", partial(world.outside_push, n)))
    if world.watcher.pipe:
        acts += [("watcher publishes", world.watch)] * 3
    acts += _hooks(world)
    for i, w in enumerate(world.workers):
        acts += [(f"step {w.ident}", partial(step_worker, world, w))] * 8
        acts.append((f"heartbeat {w.ident}", partial(heartbeat, world, w)))
        if w.actor.running or w.loop is not None:
            acts.append((f"crash {w.ident}", partial(crash_worker, world, i)))
    for d in world.dispatchers:
        if d.actor.running or world.queue:
            acts += [(f"step {d.actor.name}", partial(step_dispatcher, world, d))] * 8
        if d.actor.running:
            acts.append((f"crash {d.actor.name}", partial(crash_dispatcher, world, d)))
    acts += _flux(world)
    acts += world.applier_actions()
    acts += [("tick 1s", partial(tick, world, 1.0))] * 2
    acts += [("tick 6s", partial(tick, world, 6.0)), ("tick 60s", partial(tick, world, 60.0))]
    if world.env.exists(Keys("safety").branch_lease(world.bk)):
        acts.append(("lease expires", partial(expire_lease, world)))
    return acts


def _hooks(world: World) -> list[Action]:
    acts: list[Action] = []
    if world.deliveries:
        acts += [("webhook delivered", partial(world.deliver, 0))] * 2
        acts.append(("webhook lost", partial(world.deliveries.pop, 0)))
        if len(world.deliveries) > 1:
            acts.append(("webhook reordered", partial(world.deliver, len(world.deliveries) - 1)))
    if world.delivered:
        acts.append(("webhook replayed", world.replay))
    return acts


def _flux(world: World) -> list[Action]:
    flux, acts = world.flux, []
    if flux.source_stamp:
        acts += [("flux source fetches", world.flux_source)] * 2
    if flux.kustomization_stamp and flux.applying is None:
        acts += [("flux kustomization reconciles", world.flux_kustomization)] * 2
    if flux.applying is not None and world.now >= flux.due:
        acts += [("flux applies an object", world.flux_apply)] * 3
    return acts


def tick(world: World, seconds: float) -> None:
    world.now += seconds


def step_worker(world: World, w: Worker) -> None:
    """One interaction of the worker (a job starts when none is running). A Stale outcome it
    consumes must never add a backoff (A4)."""
    before = world.appliers_record()
    stale_only = world.pending_outcomes() == {"Stale"}
    if not w.actor.running:
        w.actor.start(world.worker_job(w))
    w.actor.step()
    after = world.appliers_record()
    consumed = stale_only and not world.pending_outcomes() and before and after
    if consumed and (after.failures, after.next_try_at) != (before.failures, before.next_try_at):
        raise Violation("a Stale outcome backed the applier off")


def heartbeat(world: World, w: Worker) -> None:
    """The worker's heartbeat renews its lease, or finds it lost."""
    lease = w.held.get(world.bk)
    if lease is not None and not w.stores.leases.renew(lease):
        w.held.mark_lost(lease)
        world.say(f"{w.ident} finds its lease lost")


def crash_worker(world: World, index: int) -> None:
    """SIGKILL: the process and its memory are gone; it restarts under a new identity."""
    old = world.workers[index]
    old.actor.crash()
    world.workers[index] = world.restart(old)


def step_dispatcher(world: World, d: Dispatcher) -> None:
    if not d.actor.running:
        if not world.queue:
            return
        d.actor.start(world.dispatcher_job(d))
    d.actor.step()


def crash_dispatcher(world: World, d: Dispatcher) -> None:
    d.actor.crash()
    if d.token is not None:
        world.running[d.token] = "dead"
        d.token = None


def expire_lease(world: World) -> None:
    """The owner's lease runs out (a dead owner, or one paused past its period)."""
    world.env.delete(world.keys.branch_lease(world.bk))
    world.say("the lease expires")


def settle(world: World) -> None:
    """Let everything finish, then run the clock until nothing is left to do."""
    for d in world.dispatchers:
        if d.actor.running:
            _until_pause(world, d)
    for i, w in enumerate(world.workers):
        if w.actor.running:
            w.actor.finish()
        holder = world.lease_holder()
        alive = {x.ident for x in world.workers if x.loop is not None and world.bk in x.held}
        if holder is not None and holder not in alive:
            expire_lease(world)
        del i
    for _ in range(SETTLE_ROUNDS):
        _round(world)
        if world.settled():
            return
        world.now += SETTLE_TICK_S
    raise Violation("the world did not settle: " + world.pending_summary())


def cadence(world: World, seconds: float, every_s: float) -> None:
    """Run the processes as they run in production for ``seconds`` of the clock: every
    ``every_s`` the owner makes a pass (its outcome read is that often) and each dispatcher
    runs its attempt up to its next pause or its outcome. Nothing else happens (the watcher
    publishes nothing, no webhook arrives)."""
    end = world.now + seconds
    while world.now < end:
        world.now += every_s
        for w in world.workers:
            if w.loop is not None:
                w.actor.start(world.worker_job(w))
                w.actor.finish()
        for d in world.dispatchers:
            if d.actor.running or world.queue:
                _until_pause(world, d)


def _round(world: World) -> None:
    world.hooks()
    while world.deliveries:
        world.deliver(0)
    while world.watcher.pipe:
        world.watch()
    for w in world.workers:
        heartbeat(world, w)
        if world.bk in w.held.lost():
            world.workers[world.workers.index(w)] = world.restart(w)
    for w in world.workers:
        w.actor.start(world.worker_job(w))
        w.actor.finish()
    flux = world.flux
    while flux.source_stamp:
        world.flux_source()
    if flux.kustomization_stamp and flux.applying is None:
        world.flux_kustomization()
    while flux.applying is not None and world.now >= flux.due:
        world.flux_apply()
    world.settle_applier()
    for d in world.dispatchers:
        if d.actor.running or world.queue:
            _until_pause(world, d)


def _until_pause(world: World, d: Dispatcher, limit: int = 200) -> None:
    for _ in range(limit):
        if not d.actor.running:
            if not world.queue:
                return
            d.actor.start(world.dispatcher_job(d))
        d.actor.step()
        if d.actor.at == "pause":
            return
