"""One schedule's world: the real product code on fakeredis, with Git, the watcher, the Git
host's webhooks and Flux simulated, and the invariants checked after every action.

Product code driven as it runs in production: ``BranchJobs.start``/``pass_`` (the branch
worker's jobs, with its ``BranchLoop`` and ``ApplierDesk``), ``services.dispatcher.attempt.run``
and ``jobs.finish`` (one attempt and its one outcome), every ``shared.store`` adapter and every
``shared.decide`` rule they call. Substituted at the narrowest seams: the git work tree and
``ls-remote`` (``simgit``), the rq transport (``SimAttempts.enqueue`` appends to a list the
dispatcher actors take from), the dispatcher's Kubernetes reads of GitTargets
(``target_facts``: the sim's one GitTarget, which always holds its reasons) and the applier
module (``SimFlux`` implements ``shared.appliers.interface`` over ``cluster.Flux``, deciding
with the product's own ``flux_plan``/``holding_revision``/``flux_handled``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import fakeredis
from fakeredis._clients._sync import FakeRedisConnection

import services.branch_worker.jobs as worker_jobs
import services.dispatcher.attempt as attempt_module
from sandbox.flux.pacing import FLUX_BEFORE_APPLY_S
from services.branch_worker.apply_window import ApplyWindowGuard
from services.branch_worker.heartbeat import HeldLeases
from services.branch_worker.jobs import BranchJobs, Outcome, no_credentials
from services.branch_worker.stores import Stores
from services.dispatcher import jobs as dispatcher_jobs
from services.dispatcher.mirrored import behind
from shared.appliers.interface import Unneeded
from shared.decide.apply_window import Decision, Verdict
from shared.decide.attempt import (
    SourceView,
    TargetFacts,
    flux_handled,
    flux_plan,
    holding_revision,
)
from shared.kube.api import ObjectList
from shared.model.appliers import Applier, Reason
from shared.model.config import ApplierRef
from shared.model.events import latest_managers
from shared.model.ids import BranchKey
from shared.model.notices import PushNotice
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.api_edits import ApiEdits
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.attribution import FactStreams
from shared.store.bells import Bells
from shared.store.branch_health import BranchHealth
from shared.store.branch_state import BranchStates
from shared.store.collisions import Collisions
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.ledger import Ledger
from shared.store.notice_reader import NoticeReader
from shared.store.notices import NoticeWriter
from shared.store.streams import GROUP, EventStream
from shared.store.watches import KnownObject, WatchFeed, WatchState
from shared.store.workers import WorkerRegistry
from tests.configs import branch_config, target_config
from tests.safety import cluster
from tests.safety.actors import Actor, yield_point
from tests.safety.cluster import NAMES, Flux, Live, Watcher, document, value_in
from tests.safety.simgit import SimRemote, SimWorkspace

URL = "https://git.example/team/repo.git"
PROVIDER = "team/gp"
APPLIER = ApplierRef("Kustomization", cluster.NAMESPACE, "apps", "")
#: The one watch feeding the branch: the GitTarget's ConfigMaps in its namespace.
FEED = WatchFeed(
    cluster.TARGET.uid, "", "v1", "configmaps", "ConfigMap", cluster.NAMESPACE, "default"
)
#: Short enough that a schedule of a few dozen actions sees windows close and CatchUps go out.
COMMIT_WINDOW_S = 2.0
QUIET_PERIOD_S = 5.0
SETTINGS = Settings()
#: Collision classes that no product can prevent, checked rather than failed (docs/safety.md):
#: an edit made after the request was sent is reverted by the apply it asked for (the apply
#: window); W1 must withhold the revert and the CatchUp repair it (``withheld``), and W2
#: mirrors a same-second tie with another manager (``tie``). An edit still in the watcher or
#: unread in the stream is caught by D3 since issue 11 path 1, so it fails.
KNOWN = ("withheld", "tie")
#: Real time never stands still: each action of a schedule takes this much of the clock, so
#: an edit made after a request is sent is observed after it (the product compares times).
ACTION_S = 0.001


class Violation(AssertionError):
    """An invariant of docs/safety.md does not hold."""


class YieldingConnection(FakeRedisConnection):
    """Every Redis command an actor sends is a point where the schedule may switch or crash."""

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        yield_point("redis")
        super().send_packed_command(command, check_health)


class SimAttempts(Attempts):
    """The real outcome stream and guard; the rq transport replaced by the world's queue."""

    def __init__(self, client: Any, keys: Keys, world: World) -> None:
        super().__init__(client, keys, "apply-attempts")
        self._world = world

    def enqueue(self, request: ApplyRequest) -> None:
        yield_point("enqueue")
        self._world.queue.append(request)
        self._world.sent_at[request.token] = self._world.moment
        self._world.requests.append((request, self._world.now, self._world.moment))


@dataclass(slots=True)
class Stamp:
    """What the product knew when a token stamped Flux: the request, and every API edit the
    commit would revert, by where its event was (``watcher``, ``stream``, ``seen``)."""

    request: ApplyRequest
    exposed: dict[str, str]


@dataclass(slots=True)
class Revert:
    """An apply that reverted an API edit Git did not hold, inside the apply window."""

    name: str
    edit: str  # the API edit's value
    value: str  # the applier's value it wrote back
    rv: str  # the revert's resourceVersion
    moment: int  # when it happened (the world's logical time)
    tie: bool  # its newest managedFields entries include another manager (W2)
    cause: str = ""  # the token whose request started the apply


def revision(commit: str) -> str:
    """The simulated artifact revision of ``commit`` ("" for none), as Flux writes it (F2)."""
    return f"main@sha1:{commit}" if commit else ""


@dataclass(slots=True)
class SimSent:
    world: World
    plan: Any
    token: str
    commit: str

    fetched: bool = False  # the source fetched after our stamp (``holding_revision``)

    def handled(self) -> bool:
        yield_point("flux-read")
        flux = self.world.flux
        ready = "Unknown" if flux.applying else "True"  # Ready while a reconcile runs (F3)
        # the simulated source never fails a fetch and is never suspended
        source = SourceView(flux.source_handled, revision(flux.artifact), "True", True)
        holding = holding_revision(self.token, source, fetched=self.fetched)
        self.fetched = self.fetched or holding != ""
        return flux_handled(
            self.plan,
            self.token,
            self.commit,
            flux.handled_at,
            revision(flux.attempted),
            ready=ready,
            holding=holding,
        )


@dataclass(slots=True)
class SimPending:
    world: World
    asked: ApplyRequest

    def request(self, reasons: Iterable[Reason], token: str) -> Any:
        yield_point("flux-stamp")
        world, flux = self.world, self.world.flux
        plan = flux_plan(list(reasons), revision(flux.artifact), self.asked.commit)
        if plan == "nothing":
            return Unneeded("the artifact already holds the commit")
        world.on_stamp(self.asked, token)
        if plan == "stamp-source":
            flux.source_stamp = token
        else:
            flux.kustomization_stamp = token
        return SimSent(world, plan, token, self.asked.commit)


class SimFlux:
    """``shared.appliers.interface.ApplierAdapter`` for the simulated Flux."""

    kind = "Kustomization"
    product = "Flux"

    def __init__(self, world: World) -> None:
        self.world = world

    def validate(self, client: Any, subject: Any, min_interval_s: float) -> Any:
        raise NotImplementedError  # the watcher's check is not part of a schedule

    def read(self, client: Any, request: ApplyRequest) -> SimPending:
        yield_point("flux-read")
        return SimPending(self.world, request)


class SimKube:
    """The dispatcher's list of a watch's namespace (``mirrored.behind``, D3): the cluster's
    objects as the API lists them now, each at its current value as resourceVersion."""

    def __init__(self, world: World) -> None:
        self.world = world

    def list(self, resource: Any, namespace: str = "", label_selector: str = "") -> ObjectList:
        yield_point("kube-list")
        items: list[dict[str, Any]] = [
            {"metadata": {**cluster.meta(n), "resourceVersion": live.rv}}
            for n, live in self.world.live.items()
        ]
        return ObjectList(items, str(self.world.edits))


@dataclass(slots=True)
class Worker:
    """A branch-worker process: its actor, identity and what it holds in memory."""

    actor: Actor
    ident: str
    jobs: BranchJobs
    held: HeldLeases
    stores: Stores
    loop: Any = None
    dead: bool = False


@dataclass(slots=True)
class Dispatcher:
    actor: Actor
    ctx: dispatcher_jobs.Context
    states: BranchStates
    token: str | None = None  # the attempt in hand
    dead: bool = False


@dataclass(slots=True)
class Delivery:
    """One webhook the Git host sends for one push."""

    ident: str
    after: str


@dataclass
class World:
    """Everything one schedule runs against."""

    log: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    #: The owners' apply window (W1's guard); off only to show that a schedule catches a race.
    apply_window: bool = True
    #: The applier the GitTarget names (``tests/safety/argo.py`` plays an Application).
    applier: ClassVar[ApplierRef] = APPLIER

    def __post_init__(self) -> None:
        self.now = 1000.0
        self.api_moments: dict[str, list[int]] = {n: [] for n in NAMES}
        #: Logical time: the number of things that happened (log lines). The clock may stand
        #: still for many actions, so what came first is told by this, not by ``now``.
        self.moment = 0
        self.sent_at: dict[str, int] = {}  # token -> the moment its request was enqueued
        #: Every request the owners enqueued: (request, the clock, the moment).
        self.requests: list[tuple[ApplyRequest, float, int]] = []
        #: The applier's cluster as the dispatcher's attempt reads it (None: the sim's Flux).
        self.applier_client: Any = None
        self.server = fakeredis.FakeServer()
        self.keys = Keys("safety")
        self.env = self._client()
        self.remote = SimRemote(say=self.say)
        seed = {cluster.path_of(n): document(n, f"{n}0") for n in NAMES}
        self.remote.outside_push(seed, "seed")
        self.remote.pushes.clear()
        self.live = {
            n: Live(f"{n}0", "flux", self.moment, cluster.flux_create(n, f"{n}0", self.now))
            for n in NAMES
        }
        self.writes = 0  # metadata-only writes, for their resourceVersions
        self.reverts: list[Revert] = []
        self.decisions: dict[str, Decision] = {}  # resourceVersion -> the guard's W1 decision
        self.flux = Flux(artifact=self.remote.tip or "")
        #: The commit the Kustomization applied when the product was installed (the seed).
        self.installed = self.remote.tip or ""
        self.watcher = Watcher()
        self.queue: list[ApplyRequest] = []
        self.deliveries: list[Delivery] = []
        self.delivered: list[Delivery] = []
        self.stamps: dict[str, Stamp] = {}
        self.outcomes: Counter[str] = Counter()
        self.entry_of: dict[str, str] = {}  # value -> its stream entry id
        self.exempt: set[str] = set()  # values a collision may write again
        self.edits = 0
        configs = ConfigStore(self.env, self.keys)
        self.branch = branch_config(URL, commit_window_s=COMMIT_WINDOW_S)
        target = target_config(
            cluster.TARGET.uid,
            cluster.NAMESPACE,
            cluster.TARGET.name,
            URL,
            "main",
            path=cluster.FOLDER,
            applier=self.applier,
            quiet_period_s=QUIET_PERIOD_S,
        )
        self.bk: BranchKey = configs.publish_served(self.branch, [target])
        self.events = EventStream(self.env, self.keys)
        # The watcher publishes the GitTarget's watch and what it has seen (the seeded objects).
        self.watches = WatchState(self.env, self.keys)
        self.watches.publish_feeds({cluster.TARGET.uid: [FEED]})
        self.watches.replace(FEED.address, "0", {n: _known(n, f"{n}0") for n in NAMES})
        self.kube = SimKube(self)
        self.states = BranchStates(self.env, self.keys)
        # No owner has published a tip yet: the first start is part of every schedule (Flux's
        # artifact holds the seeded tip, as the product's installation finds it).
        self.appliers = ApplierStore(self.env, self.keys)
        self.notices = NoticeWriter(self.env, self.keys, clock=self.clock)
        self.workers = [self._worker(f"w{i}") for i in range(2)]
        self.dispatchers = [self._dispatcher(f"d{i}") for i in range(2)]
        self.adapter = SimFlux(self)
        self.running: dict[str, str] = {}  # token -> dispatcher running its attempt

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> Any:
        return fakeredis.FakeRedis(
            server=self.server, decode_responses=True, connection_class=YieldingConnection
        )

    def clock(self) -> float:
        return self.now

    def _stores(self) -> Stores:
        c, k = self._client(), self.keys
        return Stores(
            EventStream(c, k),
            BranchStates(c, k),
            ConfigStore(c, k),
            Leases(c, k, int(SETTINGS.lease_period.total_seconds() * 1000)),
            WorkerRegistry(c, k),
            NoticeReader(c, k),
            ApplierStore(c, k),
            SimAttempts(c, k, self),
            BranchHealth(c, k),
            Ledger(c, k),
            Collisions(c, k),
            CommitRequests(c, k, SETTINGS.commit_request_ttl.total_seconds()),
            FactStreams(c, k),
            ApiEdits(c, k),
            Bells(c, k),
        )

    def _worker(self, ident: str) -> Worker:
        stores, held = self._stores(), HeldLeases()

        def workspaces(directory: Path, url: str, branch: str, env: dict[str, str]) -> Any:
            return SimWorkspace(self.remote, directory)

        jobs = BranchJobs(
            SETTINGS,
            stores,
            ident,
            self.clock,
            held,
            credentials=no_credentials,
            workspaces=workspaces,
            applied=self.applied_commit,
            apply_window=self.apply_window,
        )
        return Worker(Actor(ident), ident, jobs, held, stores)

    def applied_commit(self, ref: ApplierRef, namespaces: Collection[str]) -> str | None:
        """What the branch's first owner reads of the applier (``AppliedReader``, issue 23): the
        Kustomization's last attempted revision, else the commit it was installed at."""
        yield_point("kube-read")
        return self.flux.attempted or self.installed

    def _dispatcher(self, ident: str) -> Dispatcher:
        c = self._client()
        ctx = dispatcher_jobs.Context(
            SETTINGS,
            SimAttempts(c, self.keys, self),
            BranchStates(c, self.keys),
            ConfigStore(c, self.keys),
            Ledger(c, self.keys),
            None,  # type: ignore[arg-type]  # no cluster: the applier is simulated
            WatchState(c, self.keys),
        )
        return Dispatcher(Actor(ident), ctx, BranchStates(c, self.keys))

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        """The seams: ls-remote, the applier module and the GitTargets' reads."""
        saved = (worker_jobs.ls_remote, attempt_module.for_kind, attempt_module.target_facts)
        judge = ApplyWindowGuard._judge
        decisions = self.decisions

        def spy(
            guard: ApplyWindowGuard,
            ref: Any,
            target: Any,
            event: Any,
            key: Any,
            *more: Any,
            **named: Any,
        ) -> Decision:
            decision = judge(guard, ref, target, event, key, *more, **named)
            decisions[event.resource_version] = decision
            return decision

        ApplyWindowGuard._judge = spy  # type: ignore[method-assign]
        worker_jobs.ls_remote = lambda url, branch, env=None: self.remote.ls_remote()  # type: ignore[assignment]
        attempt_module.for_kind = lambda kind: self.adapter  # type: ignore[assignment]
        attempt_module.target_facts = self._facts  # type: ignore[assignment]
        try:
            yield
        finally:
            worker_jobs.ls_remote, attempt_module.for_kind, attempt_module.target_facts = saved
            ApplyWindowGuard._judge = judge  # type: ignore[method-assign]
            for w in self.workers:
                w.actor.crash()
            for d in self.dispatchers:
                d.actor.crash()

    def _facts(self, request: ApplyRequest, reader: Any) -> dict[str, TargetFacts]:
        yield_point("kube-read")
        wanted = {uid for uids in request.reasons.values() for uid in uids}
        return {u: TargetFacts(u, True, True, True, True, False) for u in wanted}

    def _kube(self, name: str) -> Any:
        return self.kube

    def say(self, text: str) -> None:
        self.moment += 1
        self.log.append(f"t={self.now - 1000:.1f} {text}")

    # -- the worker and dispatcher jobs -----------------------------------------------------

    def worker_job(self, w: Worker) -> Callable[[], None]:
        def job() -> None:
            if w.loop is None:
                self._take(w)
                return
            batch = w.stores.events.read(self.bk, w.ident, 500, None)
            news = w.stores.notices.read(self.bk)
            result = w.jobs.pass_(self.bk, w.loop, batch, news)
            self.say(f"{w.ident} pass: {len(batch)} events, {len(news)} notices: {result.outcome}")
            if result.outcome in (Outcome.LOST, Outcome.FAILED):
                self._drop(w, give_back=result.outcome is Outcome.FAILED)

        return job

    def _take(self, w: Worker) -> None:
        lease = w.stores.leases.acquire(self.bk, w.ident)
        if lease is None:
            return
        w.held.add(lease)
        result = w.jobs.start(self.bk, self.branch, lease)
        self.say(f"{w.ident} takes the branch (token {lease.token}): {result.outcome}")
        if result.outcome is Outcome.STARTED:
            w.loop = result.loop
        else:
            self._drop(w, give_back=result.outcome is Outcome.FAILED)

    def _drop(self, w: Worker, give_back: bool) -> None:
        lease = w.held.remove(self.bk)
        w.stores.notices.forget(self.bk)
        w.loop = None
        if give_back and lease is not None:
            w.stores.leases.release(lease)

    def dispatcher_job(self, d: Dispatcher) -> Callable[[], None]:
        def job() -> None:
            if not self.queue:
                return
            request = self.queue.pop(0)
            d.token = request.token
            ports = attempt_module.Ports(
                None,  # type: ignore[arg-type]  # target_facts is the sim's
                lambda name: self.applier_client,
                lambda r: self.remote.ls_remote(),
                lambda bk: d.states.read(BranchKey(bk)),
                lambda r, reasons, plan: yield_point("event"),
                self.clock,
                lambda s: yield_point("pause"),
                behind=lambda r: behind(self.bk, d.ctx.configs, d.ctx.watches, self._kube),
            )
            outcome = attempt_module.run(request, ports)
            self.say(
                f"{d.actor.name} attempt {request.token[:6]}: {outcome.outcome} {outcome.message}"
            )
            self._finish(d, request, outcome)
            d.token = None

        return job

    def _finish(self, d: Dispatcher, request: ApplyRequest, outcome: AttemptOutcome) -> None:
        before = self.env.xlen(self.keys.branch_outcomes(self.bk))
        dispatcher_jobs.finish(d.ctx, request, outcome)
        if self.env.xlen(self.keys.branch_outcomes(self.bk)) > before:
            self.outcomes[request.token] += 1
            self.counts[f"outcome {outcome.outcome}"] += 1
            if self.outcomes[request.token] > 1:
                raise Violation(f"token {request.token} got a second outcome")
        self.running.pop(request.token, None)

    # -- what the product knew at a stamp (the core promise) --------------------------------

    def ancestry_values(self, sha: str | None) -> dict[str, set[str]]:
        """Every value each object had in the commits up to ``sha``."""
        seen: dict[str, set[str]] = {n: set() for n in NAMES}
        cursor = sha
        while cursor is not None:
            tree = self.remote.commits[cursor].tree
            for n in NAMES:
                value = value_in(tree, n)
                if value is not None:
                    seen[n].add(value)
            cursor = self.remote.commits[cursor].parent
        return seen

    def where(self, value: str) -> str:
        """Where an API edit's event is: the watcher's pipe, unread in the stream, or seen."""
        if any(e.resource_version == value for e in self.watcher.pipe):
            return "watcher"
        entry = self.entry_of.get(value)
        if entry is None:
            return "seen"
        groups = self.env.xinfo_groups(self.keys.branch_events(self.bk))
        delivered = next((g["last-delivered-id"] for g in groups if g["name"] == GROUP), "0-0")
        return "stream" if _entry_key(entry) > _entry_key(delivered) else "seen"

    def on_stamp(self, request: ApplyRequest, token: str) -> None:
        """A token stamps Flux: at most one attempt out per applier; note what it exposes."""
        others = [t for t, who in self.running.items() if t != token and who != "dead"]
        if others:
            raise Violation(f"two attempts out for one applier: {token} while {others}")
        self.running[token] = "live"
        published = self.ancestry_values(request.commit)
        exposed = {
            n: self.where(live.value)
            for n, live in self.live.items()
            if live.by == "api" and live.value not in published[n]
        }
        self.stamps[token] = Stamp(request, exposed)
        self.say(f"stamp {token[:6]} at {request.commit[:6]} exposing {exposed}")

    def collide(
        self,
        name: str,
        live: Live,
        after: Live,
        cause: str | None = None,
        manager: str = cluster.FLUX_MANAGER,
    ) -> None:
        """An apply reverts an API edit the Git commit does not hold: classify it. An edit
        made after the request was sent is the apply window's: a ``tie`` when the revert's
        newest managedFields entries share their second with another manager (W2, mirrored),
        else it must be ``withheld`` (W1) and repaired (checked by ``check_end``)."""
        stamp = self.stamps.get(self.flux.cause if cause is None else cause)
        if stamp is None:
            kind = "unexplained"
        elif live.at > self.sent_at[stamp.request.token]:
            newest = {e.manager for e in latest_managers(after.obj["metadata"]["managedFields"])}
            tie = bool(newest - {manager})
            kind = "tie" if tie else "withheld"
            revert = Revert(name, live.value, after.value, after.rv, self.moment, tie)
            revert.cause = stamp.request.token
            self.reverts.append(revert)
        else:
            kind = stamp.exposed.get(name, "unexplained")
        self.counts[f"collision {kind}"] += 1
        self.say(f"COLLISION {kind}: {manager} reverts {name}={live.value}")
        if kind not in KNOWN:
            raise Violation(
                f"the core promise broke ({kind}): {manager} reverted {name}={live.value}"
            )
        if kind == "tie":
            self.exempt.add(after.value)  # W2: the tie is mirrored, the applier's value again

    # -- environment actions ----------------------------------------------------------------

    def api_edit(self, name: str, manager: str = cluster.KUBECTL) -> None:
        self.edits += 1
        value = f"{name}-api{self.edits}"
        obj = cluster.api_update(self.live[name].obj, value, manager, self.now)
        self.live[name] = Live(value, "api", self.moment, obj)
        self.api_moments[name].append(self.moment)
        self.watcher.observe(self.live[name])
        self.say(f"API edit {name}={value} by {manager}")

    def watch(self) -> None:
        event = dataclasses.replace(self.watcher.pipe.pop(0), observed_at=self.now)
        entry = self.events.publish(self.bk, event)
        self.entry_of[event.resource_version] = entry
        name = event.object_id.name
        seen = {name: _known(name, event.resource_version)}
        self.watches.advance(FEED.address, event.resource_version, seen=seen)
        self.say(f"watcher publishes {event.object_id.name}={event.resource_version}")

    def outside_push(self, name: str) -> None:
        self.edits += 1
        value = f"{name}-git{self.edits}"
        sha = self.remote.outside_push({cluster.path_of(name): document(name, value)}, value)
        self.say(f"outside push {name}={value} -> {sha[:6]}")

    def hooks(self) -> None:
        """The Git host queues one webhook per push that landed since last asked."""
        while self.remote.pushes:
            sha, _ = self.remote.pushes.pop(0)
            self.deliveries.append(
                Delivery(f"dlv-{len(self.delivered) + len(self.deliveries)}", sha)
            )

    def deliver(self, index: int) -> None:
        d = self.deliveries.pop(index)
        self._store(d)
        self.delivered.append(d)

    def replay(self) -> None:
        self._store(self.delivered[-1])

    def _store(self, d: Delivery) -> None:
        notice = PushNotice(PROVIDER, URL, "refs/heads/main", d.after, d.ident, self.now)
        stored = self.notices.store(PROVIDER, d.ident, [notice])
        self.say(f"webhook {d.ident} after={d.after[:6]} {'stored' if stored else 'replay'}")

    def flux_source(self) -> None:
        flux = self.flux
        token, flux.source_stamp = flux.source_stamp, None
        flux.source_handled = token or flux.source_handled  # the annotation stays (F1)
        if self.remote.tip and self.remote.tip != flux.artifact:
            flux.artifact = self.remote.tip
            self._start_apply("", token or "")
        self.say(f"source fetched {flux.artifact[:6]}")

    def flux_kustomization(self) -> None:
        flux = self.flux
        token, flux.kustomization_stamp = flux.kustomization_stamp, None
        self._start_apply(token or "", token or "")

    def _start_apply(self, token: str, cause: str) -> None:
        """The reconcile starts: the first object is applied ``FLUX_BEFORE_APPLY_S`` later at
        the earliest (the sandbox's pacing, pinned to the seed's "a few seconds after its
        stamp"), and then whenever the schedule lets Flux go on: a random delay."""
        flux = self.flux
        flux.applying, flux.apply_token, flux.cause = flux.artifact, token, cause
        flux.attempted = flux.artifact
        flux.todo = list(NAMES)
        flux.due = self.now + FLUX_BEFORE_APPLY_S

    def flux_apply(self) -> None:
        """Flux takes the next object: ``cleanupMetadata`` (a write of its own when a
        ``kubectl*`` manager is there), then the forced apply when the object drifted."""
        flux = self.flux
        assert flux.applying is not None
        name = flux.todo.pop(0)
        value = value_in(self.remote.tree(flux.applying), name)
        live = self.live[name]
        cleaned = cluster.flux_cleanup(live.obj) if value is not None else None
        if cleaned is not None:
            self.writes += 1
            live = Live(live.value, live.by, live.at, cleaned, f"{live.value}~{self.writes}")
            self.live[name] = live
            self.watcher.observe(live)
            self.say(f"Flux cleans up {name}'s managedFields")
        if value is not None and value != live.value:
            after = Live(value, "flux", self.moment, cluster.flux_apply(live.obj, value, self.now))
            if live.by == "api" and live.value not in self.ancestry_values(flux.applying)[name]:
                self.collide(name, live, after)
            self.live[name] = after
            self.watcher.observe(after)
            self.say(f"Flux applies {name}={value} from {flux.applying[:6]}")
        if not flux.todo:
            flux.handled_at = flux.apply_token or flux.handled_at
            flux.applying = None

    # -- another applier's hooks (``tests/safety/argo.py``): none for the sim's Flux ----------

    def applier_actions(self) -> list[tuple[str, Callable[[], None]]]:
        """The actions of an applier other than Flux (Flux's are ``schedule._flux``)."""
        return []

    def settle_applier(self) -> None:
        """One settling round of an applier other than Flux."""

    def diverged(self) -> set[str]:
        """Objects the applier itself failed to apply last (the user's to fix, not the
        product's): the end does not require them to equal the Git tip."""
        return set()

    # -- bookkeeping for the schedule ---------------------------------------------------------

    def restart(self, old: Worker) -> Worker:
        """A crashed (or lost) worker process comes back under a new identity."""
        old.actor.crash()
        base, _, n = old.ident.partition("-")
        fresh = self._worker(f"{base}-{int(n or 0) + 1}")
        self.say(f"{old.ident} is gone; {fresh.ident} starts")
        return fresh

    def lease_holder(self) -> str | None:
        value = self.env.get(self.keys.branch_lease(self.bk))
        return str(value).partition("|")[0] if value else None

    def appliers_record(self) -> Any:
        text = self.env.get(self.keys.applier(self.applier.key))
        return Applier.from_json(str(text)) if text else None

    def pending_outcomes(self) -> set[str]:
        entries = self.env.xrange(self.keys.branch_outcomes(self.bk))
        return {fields.get("outcome", "") for _, fields in entries}

    def settled(self) -> bool:
        """Nothing in flight anywhere, nothing owed, every worker idle, and the owner has read
        the remote's tip. An outside push whose webhook was lost is found by the owner's
        steady tick (Q7: a missing webhook costs latency, never an apply), and until then no
        part of the product can know the applier holds an older commit than Git's tip (Flux's
        source may have fetched before that push; issue 23), so the world waits for it."""
        record = self.appliers_record()
        view = self.states.read(self.bk).view()
        if view.tip != self.remote.tip:
            return False
        return not (
            self.watcher.pipe
            or self.events.pending_count(self.bk)
            or self.deliveries
            or self.queue
            or any(d.actor.running for d in self.dispatchers)
            or self.flux.source_stamp
            or self.flux.kustomization_stamp
            or self.flux.applying
            or (record is not None and (record.owes() or record.attempt))
            or any(w.loop is not None and w.loop.busy() for w in self.workers)
            or view.windows_open
            or view.pending_total
            or view.push_in_flight
            or not any(w.loop is not None for w in self.workers)
        )

    def pending_summary(self) -> str:
        record = self.appliers_record()
        return (
            f"watcher={len(self.watcher.pipe)} queue={len(self.queue)} flux={self.flux} "
            f"applier={record} state={self.states.read(self.bk)}"
        )

    # -- invariants -------------------------------------------------------------------------

    def check_step(self) -> None:
        if self.remote.forced:
            raise Violation(f"a push was forced: {self.remote.forced}")

    def check_end(self) -> None:
        self._check_window()
        tip = self.remote.tree(self.remote.tip)
        for n in NAMES:
            if value_in(tip, n) != self.live[n].value and n not in self.diverged():
                raise Violation(
                    f"no convergence: {n} is {self.live[n].value} in the cluster, "
                    f"{value_in(tip, n)} in Git"
                )
        introduced: dict[str, str] = {}
        parent: dict[str, bytes] = {}
        for sha in self.remote.history():
            tree = self.remote.commits[sha].tree
            for n in NAMES:
                value = value_in(tree, n)
                if value is None or value_in(parent, n) == value:
                    continue
                if value in introduced and value not in self.exempt:
                    raise Violation(
                        f"{n}={value} written twice ({introduced[value][:6]}, {sha[:6]})"
                    )
                introduced[value] = sha
            parent = tree
        for token in self.stamps:
            if self.outcomes[token] > 1:
                raise Violation(f"token {token} has {self.outcomes[token]} outcomes")

    def _check_window(self) -> None:
        """W1-W2 and the repair: a revert inside the apply window is withheld (never
        mirrored), and Git holds the edit it reverted unless the API edited the object again
        after it (the commit window may then fold it, M6); a tie is counted ambiguous when its
        owner judged it. The written-twice check (no exemption for a withheld revert's value)
        and convergence finish the repair: no commit of the applier's value, cluster = tip."""
        history = self.ancestry_values(self.remote.tip)
        for r in self.reverts:
            decision = self.decisions.get(r.rv)
            if r.tie:
                if decision is not None and decision.verdict is not Verdict.AMBIGUOUS:
                    raise Violation(f"a tie {r.name}={r.value} was judged {decision}")
                continue
            if decision is not None and decision.mirrored:
                raise Violation(
                    f"a revert of {r.name}={r.edit} inside the apply window was mirrored: "
                    f"{decision.why}"
                )
            later = any(moment > r.moment for moment in self.api_moments[r.name])
            if r.edit not in history[r.name] and not later:
                raise Violation(f"the withheld edit {r.name}={r.edit} never reached Git")


def _known(name: str, value: str) -> KnownObject:
    """What the watch records after publishing the object at ``value`` (its resourceVersion)."""
    return KnownObject(cluster.meta(name)["uid"], "ConfigMap", "v1", value)


def _entry_key(entry: str) -> tuple[int, int]:
    ms, _, seq = entry.partition("-")
    return int(ms), int(seq or 0)
