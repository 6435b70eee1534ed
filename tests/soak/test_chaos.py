"""The soak (issue 11): API edits, outside pushes and webhooks while processes and Redis die.

``make chaos`` runs it for ``CHAOS_SECONDS`` (600); ``make test`` runs it for 60 s. Every
process of the Procfile runs against the sandbox (tests/e2e/system.py) on a private
redis-server with AOF and ``appendfsync always`` (what the product needs of Redis to lose
nothing: docs/architecture.md "Redis persistence"). Five tenants, each a GitProvider with a
GitHub receiver the Git host calls on every push: three GitTargets with no applier, whose
ConfigMaps are edited, and two whose applier is a Flux Kustomization, which get outside pushes
(as all five do) that Flux is asked to apply (``APPLY_EDITS`` below). The Flux doubles run
at their pinned default pacing (``sandbox.flux.pacing.flux_default``: an apply starts 2 s after
it is woken, the seed's "a few seconds"), so API edits land inside applies as they would.
During the soak the actors of ``tests/soak/actors.py`` edit, push and kill;
then every process and Redis run again, the soak waits (bounded) until every event is
acknowledged, nothing is owed and Git matches, and checks what ``tests/soak/checks.py`` says.
Every lost edit is printed with its timeline and its class (``tests/soak/losses.py``): a W2
tie (the spec mirrors a same-second tie with another manager) is reported, not failed; any
other loss fails the soak. The apply-window collisions the branch workers logged (withheld,
ambiguous) are printed too. ``CHAOS_SEED`` replays a run's random choices (the threads'
interleaving is the machine's, so a replay is not the same run); the seed is printed first.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from kubernetes import client as k8s
from rq import Queue

from sandbox.flux.activity import Record
from sandbox.flux.pacing import flux_default
from sandbox.kube.access import AccessRule
from sandbox.kube.audit import AuditWebhook
from sandbox.stack import Identities
from shared.store.attempts import Attempts
from shared.store.attribution import AuditRoutes
from tests.e2e.conftest import (
    FLUX_SETTINGS,
    GROUP,
    VERSION,
    ApplierTenant,
    FluxTenants,
    Launcher,
    keys_of,
    start_process,
)
from tests.e2e.system import ALL, System
from tests.helpers import wait_until
from tests.integration.redis_group import PrimaryKiller, SentinelGroup
from tests.integration.redis_server import RedisServer
from tests.soak import checks, losses
from tests.soak.actors import VICTIMS as VICTIM_NAMES
from tests.soak.actors import Chaos, Editor, Outsider
from tests.soak.stamps import StampLog
from tests.soak.timeline import timeline

pytestmark = pytest.mark.e2e

SECONDS = float(os.environ.get("CHAOS_SECONDS", "60"))
SEED = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(10**6))
#: What the chaos actor may kill (``CHAOS_VICTIMS``, comma-separated): by default every
#: process of the Procfile and Redis.
VICTIMS = tuple(os.environ.get("CHAOS_VICTIMS", ",".join(VICTIM_NAMES)).split(","))
#: Whether the editor also edits the ConfigMaps of the Flux tenants (``CHAOS_APPLY_EDITS=1``).
#: By default it edits only the tenants without an applier, and the Flux tenants get outside
#: pushes only (each a ForeignCommit Flux is asked to apply, one token each). With it, Flux
#: applies the folder being edited: an API edit made between the dispatcher's last check (D3)
#: and Flux's apply is reverted by the apply, and the apply window (W1) must withhold that
#: revert so the CatchUp applies the edit back; the soak then counts what was withheld and
#: fails on any loss but a W2 tie (docs/architecture.md "The apply window").
APPLY_EDITS = os.environ.get("CHAOS_APPLY_EDITS", "") == "1"
#: ``CHAOS_REDIS=sentinel``: Redis is a Sentinel group (a primary, two replicas, three
#: sentinels, tests/integration/redis_group.py); killing "redis" kills its primary, the
#: processes follow the promoted replica, and GITOPS_REVERSER_REDIS_MIN_REPLICAS is 1. The
#: failovers and their times are printed. Default ``single``: one redis-server.
REDIS_MODE = os.environ.get("CHAOS_REDIS", "single")
if REDIS_MODE not in ("single", "sentinel"):
    raise ValueError(f"CHAOS_REDIS={REDIS_MODE!r}: single or sentinel")
#: ``CHAOS_ATTRIBUTION=1``: attribution on (docs/attribution.md), as ``make up ATTRIBUTION=1``
#: sets it up: the ClusterProvider's ``spec.attribution`` names an audit route, the API double's
#: audit sender POSTs every write's audit event to the receiver's ``/audit-webhook/<route>``,
#: and the Flux doubles act as kustomize-controller's service account, so a same-second tie
#: with an apply is decided by the audit fact of the write (W2) unless the fact is missing.
ATTRIBUTION = os.environ.get("CHAOS_ATTRIBUTION", "") == "1"
#: The audit route, the token Secret (in the product's namespace, Settings.namespace's
#: default) and the users of the API double's tokens when attribution is on.
AUDIT_ROUTE = "chaos"
AUDIT_SECRET = "audit-token"
AUDIT_TOKEN = "chaos-audit-token"
PRODUCT_NS = "gitops-reverser"
FLUX_USER = "system:serviceaccount:flux-system:kustomize-controller"
IDENTITIES = Identities(
    {"chaos-product": "gitops-reverser", "chaos-editor": "editor", "chaos-flux": FLUX_USER},
    (AccessRule("*", ("*",), ("*",), ("*",)),),
    product_token="chaos-product",
    admin_token="chaos-editor",
    flux_token="chaos-flux",
)
#: The attribution grace with attribution on: far above the audit sender's 1 s batch wait, so
#: a loaded machine does not turn a late fact into a missing one (the wait ends when the fact
#: arrives; a fact lost with a killed receiver costs one grace and leaves the tie undecided).
ATTRIBUTION_GRACE = "10s"
#: Tenants edited without an applier, and tenants whose GitTarget names a Kustomization.
TENANTS, FLUX_TENANTS = 3, 2
#: Bound on the quiet drain after the last kill: every event acknowledged, nothing owed.
DRAIN_S = 240.0
#: How long an actor may take to finish the action in hand once asked to stop.
JOIN_S = 120.0


def say(text: str) -> None:
    print(f"chaos: {text}", flush=True)


@dataclass(frozen=True, slots=True)
class Soak:
    """One soak's parameters: ``make chaos``'s from the environment, the failover tier's
    (tests/failover) its own."""

    seconds: float
    seed: int
    victims: tuple[str, ...]
    apply_edits: bool
    #: Redis is a Sentinel group (``CHAOS_REDIS=sentinel``): "redis" kills its primary, the
    #: processes follow the promoted replica, and acknowledged writes wait for a replica.
    sentinel: bool = False
    #: Attribution on (``CHAOS_ATTRIBUTION=1``): audit facts decide same-second ties.
    attribution: bool = False


FROM_ENV = Soak(SECONDS, SEED, VICTIMS, APPLY_EDITS, REDIS_MODE == "sentinel", ATTRIBUTION)


@contextmanager
def soak_redis(directory: Path, sentinel: bool) -> Iterator[RedisServer | PrimaryKiller]:
    """The soak's Redis, with AOF: one server, or a Sentinel group (a primary, two replicas,
    three sentinels) whose primary is what "redis" kills."""
    if not sentinel:
        server = RedisServer(directory / "redis", aof=True)
        server.start()
        try:
            yield server
        finally:
            server.stop()
        return
    group = SentinelGroup(directory / "group")
    try:
        group.start()
        yield PrimaryKiller(group)
    finally:
        group.stop()


@contextmanager
def soak_system(
    directory: Path,
    target: RedisServer | PrimaryKiller,
    sentinel: bool,
    attribution: bool = False,
) -> Iterator[tuple[System, redis.Redis]]:
    client = target.client()
    # Flux at its pinned default pacing (an apply starts 2 s after it is woken, the seed's
    # "a few seconds"), not the e2e tier's pause-free doubles: the soak measures the apply
    # window as a user meets it
    launcher = Launcher(directory / "system", client, target.url, flux_pacing=flux_default())
    settings = dict(FLUX_SETTINGS)
    if sentinel:  # what docs/install.md advises with Sentinel
        settings["redis_min_replicas"] = "1"
    if attribution:
        settings["attribution_grace"] = ATTRIBUTION_GRACE
    try:
        if not attribution:
            yield launcher.start(**settings), client
            return
        running = launcher.start(IDENTITIES, **settings)
        _attribution_on(running, client)
        yield running, client
    finally:
        launcher.stop_all()
        client.close()


def _attribution_on(running: System, client: redis.Redis) -> None:
    """docs/attribution.md on the soak's cluster, as ``make up ATTRIBUTION=1`` does it: the
    token Secret, the ClusterProvider's ``spec.attribution``, the audit sender to the
    receiver; returns once the watcher has published the route."""
    running.namespace(PRODUCT_NS)
    running.core.create_namespaced_secret(
        PRODUCT_NS,
        k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name=AUDIT_SECRET), string_data={"token": AUDIT_TOKEN}
        ),
    )
    attribution = {"auditRoute": AUDIT_ROUTE, "tokenSecretRef": {"name": AUDIT_SECRET}}
    running.custom.patch_cluster_custom_object(
        GROUP, VERSION, "clusterproviders", "default", {"spec": {"attribution": attribution}}
    )
    url = f"http://127.0.0.1:{running.receiver_port}/audit-webhook/{AUDIT_ROUTE}"
    running.sbx.kube.set_audit_webhook(AuditWebhook(url, AUDIT_TOKEN))
    routes = AuditRoutes(client, keys_of(running))
    wait_until(lambda: routes.lookup(AUDIT_ROUTE) is not None, 60, "the audit route published")


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[RedisServer | PrimaryKiller]:
    with soak_redis(tmp_path, FROM_ENV.sentinel) as target:
        yield target


@pytest.fixture
def system(
    tmp_path: Path, aof_redis: RedisServer | PrimaryKiller
) -> Iterator[tuple[System, redis.Redis]]:
    with soak_system(tmp_path, aof_redis, FROM_ENV.sentinel, FROM_ENV.attribution) as made:
        yield made


@pytest.mark.timeout(SECONDS + DRAIN_S + 2 * JOIN_S + 300)
def test_nothing_lost_or_repeated_while_processes_and_redis_are_killed(
    tmp_path: Path, aof_redis: RedisServer | PrimaryKiller, system: tuple[System, redis.Redis]
) -> None:
    """Issue 11 "Soak" (M8, D1, Q1, C9): see the module docstring and checks.py."""
    problems = run_soak(tmp_path, aof_redis, system, FROM_ENV)
    assert not problems, f"seed {FROM_ENV.seed}: " + "; ".join(problems)


def run_soak(
    tmp_path: Path,
    target: RedisServer | PrimaryKiller,
    system: tuple[System, redis.Redis],
    soak: Soak,
) -> list[str]:
    """Run the actors for ``soak.seconds``, drain, check; the problems found."""
    running, client = system
    seed = soak.seed
    say(
        f"seed {seed} (CHAOS_SEED={seed} replays the choices), {soak.seconds:.0f}s, "
        f"victims {soak.victims}, Redis {'a Sentinel group' if soak.sentinel else 'one server'}, "
        f"attribution {'on' if soak.attribution else 'off'}"
    )
    say(f"Flux applies the edited folder: {soak.apply_edits}; logs in {tmp_path}")
    stamps = StampLog(running.api)
    stamps.start()
    makers = FluxTenants(running, client)
    edited: list[ApplierTenant] = [makers.make_hooked(f"chaos-{i}") for i in range(TENANTS)]
    # pruning as docs/flux.md sets it up: an API delete that an apply re-created is withheld
    # (W1), and only a pruning Kustomization takes the re-created object away at the CatchUp
    fluxed = [makers.make_flux(f"chaos-flux-{i}", prune=True) for i in range(FLUX_TENANTS)]
    tenants = [*edited, *fluxed]
    edited += fluxed if soak.apply_edits else []
    queue = Attempts(client, keys_of(running), running.env["GITOPS_REVERSER_APPLY_QUEUE"]).queue()
    start_memory = checks.memory(client)
    prefix = running.env["GITOPS_REVERSER_KEY_PREFIX"]
    start_families = checks.key_families(client, prefix)
    start_bytes = checks.byte_families(client, prefix)
    stop = threading.Event()
    editor = Editor("editor", seed, stop, tenants=edited, api=running.core)
    urls = {t.tenant.repo: t.tenant.url for t in tenants}
    outsider = Outsider.cloning(seed, stop, urls, tmp_path / "outside")
    chaos = Chaos("chaos", seed, stop, system=running, redis=target, victims=soak.victims)
    actors = (editor, outsider, chaos)
    began = time.monotonic()
    for actor in actors:
        actor.start()
    stop.wait(soak.seconds)  # the soak's length: the actors act meanwhile
    stop.set()
    for actor in actors:
        actor.join(JOIN_S)
    # C9: a process ends only when killed, and the chaos actor started again what it killed
    exited = [name for name in ALL if not running.procs.running(name)]
    _everything_up(running, target)
    say(f"chaos over after {time.monotonic() - began:.0f}s; draining (at most {DRAIN_S:.0f}s)")
    waiting = _drain(tenants, editor, queue, _worker_logs(running))
    stamps.stop()
    problems = [e for a in actors for e in a.errors] + stamps.errors + waiting
    problems += [f"{name} exited on its own" for name in exited]
    for line in chaos.log:
        say(line)
    if isinstance(target, PrimaryKiller):
        for line in target.report():
            say(line)
    run = Run(tenants, editor, outsider, chaos, stamps, _flux_log(running), _worker_logs(running))
    grown = checks.key_families(client, prefix)
    grown.subtract(start_families)
    say(f"keys grown by family: {dict(c for c in grown.most_common(8) if c[1] > 0)}")
    grown_bytes = checks.byte_families(client, prefix)
    grown_bytes.subtract(start_bytes)
    say(f"bytes grown by family: {dict(c for c in grown_bytes.most_common(8) if c[1] > 0)}")
    facts = sum(n for f, n in grown_bytes.items() if f.startswith(checks.AUDIT_FAMILY))
    problems += _report(run, client, start_memory, seed, facts=max(facts, 0))
    return problems


@dataclass(frozen=True, slots=True)
class Run:
    """What acted during the soak, and what watched."""

    tenants: list[ApplierTenant]
    editor: Editor
    outsider: Outsider
    chaos: Chaos
    stamps: StampLog
    flux: list[Record]
    worker_logs: list[Path]


def _everything_up(running: System, server: RedisServer | PrimaryKiller) -> None:
    """Redis and every process running again (the chaos actor revives what it kills, unless it
    was stopped between the two)."""
    if not server.running():
        server.start()
    for name in ALL:
        if not running.procs.running(name):
            start_process(running, name)


def _settled(
    tenants: list[ApplierTenant], editor: Editor, queue: Queue, logs: list[Path], last: list[str]
) -> bool:
    last[:] = checks.drained(tenants, queue)
    if last:
        return False
    seen = losses.collisions(logs)  # a W2 tie never reaches Git: the drain does not wait for it
    last[:] = [
        loss.line()
        for loss in _losses(tenants, editor, seen, cluster=False)
        if loss.kind != losses.W2_TIE
    ]
    return not last


def _drain(
    tenants: list[ApplierTenant], editor: Editor, queue: Queue, logs: list[Path]
) -> list[str]:
    """Wait (bounded) until nothing is in flight and Git holds the editor's last writes (but
    for W2 ties, tests/soak/losses.py); what was still waiting at the deadline, else []."""
    last: list[str] = []
    began = time.monotonic()
    try:
        wait_until(lambda: _settled(tenants, editor, queue, logs, last), DRAIN_S, "the drain", 0.5)
    except AssertionError as err:
        return [f"{err}: {'; '.join(last)}"]
    say(f"drained in {time.monotonic() - began:.1f}s")
    return []


def _report(
    run: Run, client: redis.Redis, start: tuple[int, int], seed: int, *, facts: int = 0
) -> list[str]:
    """Print the figures; the problems they show. ``facts``: the bytes the attribution facts
    grew by (bounded by count and TTL, not by the drain: not held to the memory bound)."""
    problems: list[str] = []
    editor = run.editor
    say(f"API edits: {editor.count} {editor.kinds}, over {len(editor.final)} ConfigMaps")
    seen = losses.collisions(run.worker_logs)
    found = _losses(run.tenants, editor, seen, cluster=True)
    for tenant in run.tenants:
        mine = [loss for loss in found if loss.namespace == tenant.ns]
        for name in sorted({loss.name for loss in mine}):
            timeline(
                tenant,
                name,
                history=editor.history,
                stamps=run.stamps.stamps(),
                flux=run.flux,
                kills=run.chaos.log,
                say=say,
            )
        places = [sum(1 for loss in mine if loss.where == w) for w in ("git", "cluster")]
        say(
            f"{tenant.ns}: {len(checks.expected(editor.final, tenant.ns))} objects expected; "
            f"differ in Git {places[0]}, in the cluster {places[1]}"
        )
    for loss in found:
        say(f"lost: {loss.line()}")
    by_class = {
        k: sum(1 for x in found if x.kind == k) for k in (losses.W2_TIE, losses.UNEXPLAINED)
    }
    say(
        f"losses (Git or cluster) by class: {by_class}; apply-window collisions logged: "
        f"{losses.counts(seen)} (W2 ties are mirrored as the spec says and reported, not failed)"
    )
    ties = losses.undecided(seen)
    say(
        f"undecided ties (W2, mirrored): {sum(ties.values())}"
        + (f" in {editor.count} API edits, by missing facts: {ties}" if ties else "")
    )
    say(f"same-second ties judged, by outcome and deciding fact: {losses.ties(seen)}")
    problems += [loss.line() for loss in found if loss.kind == losses.UNEXPLAINED]
    counts: dict[str, int] = {}
    repeated = 0
    for tenant in run.tenants:
        counts.update(checks.value_commits(tenant.tenant.bare, seed))
        repeated += checks.repeated_patches(tenant.tenant.bare)
        for commit in run.outsider.pushed.get(tenant.tenant.repo, []):
            if not _ancestor(tenant, commit):
                problems.append(f"{tenant.ns}: outside commit {commit[:12]} not on main")
    tie_finals, tie_restored = losses.tie_exemptions(
        found, editor.final, editor.history, seen, counts
    )
    twice = sorted(v for v, n in counts.items() if n > 1 and v not in tie_restored)
    finals = [v for v in editor.final.values() if v is not None and v not in tie_finals]
    not_once = sorted(v for v in finals if counts.get(v, 0) != 1)
    excused_finals = [v for v in tie_finals if counts.get(v, 0) != 1]
    excused_twice = [v for v in tie_restored if counts.get(v, 0) > 1]
    say(
        f"values in Git: {len(counts)} of {len(editor.values)} written (the rest folded by a "
        f"window); in more than one commit: {len(twice)}; final values not in exactly one "
        f"commit: {len(not_once)}; commits repeating a patch: {repeated}; not counted, as "
        f"W2 ties (losses.tie_exemptions): {len(excused_finals)} final values in no commit, "
        f"{len(excused_twice)} values in more than one"
    )
    problems += [f"value {v} added by {counts[v]} commits" for v in twice]
    _timelines_of_values(run, twice)
    problems += [f"final value {v} added by {counts.get(v, 0)} commits" for v in not_once]
    problems += [f"{repeated} commits repeat another's patch"] if repeated else []
    pushed = sum(len(c) for c in run.outsider.pushed.values())
    say(f"outside pushes: {pushed} ({run.outsider.rejected} lost a race and were redone)")
    per_token = run.stamps.per_token()
    doubled = sorted(t for t, n in per_token.items() if n > 1)
    say(
        f"stamps: {sum(per_token.values())} for {len(per_token)} tokens; tokens stamped more "
        f"than once: {len(doubled)}"
    )
    problems += [f"token {t} stamped {per_token[t]} times" for t in doubled]
    for tenant in run.tenants:
        events = len(tenant.events())
        stamped = sum(1 for s in run.stamps.stamps() if s.namespace == tenant.ns)
        say(f"{tenant.ns}: ApplyRequested Events {events}, stamps {stamped}")
        if events > stamped:
            problems.append(f"{tenant.ns}: {events} ApplyRequested Events for {stamped} stamps")
    say(f"kills: {run.chaos.kills} ({run.chaos.downtime_s:.0f}s down in all)")
    used, keys = checks.memory(client)
    say(
        f"Redis used_memory {start[0]} -> {used} bytes ({used - start[0]:+d}; bound "
        f"+{checks.MEMORY_BOUND} besides the attribution facts' +{facts}), keys {start[1]} -> "
        f"{keys}"
    )
    if used - start[0] - facts > checks.MEMORY_BOUND:
        problems.append(f"Redis memory grew by {used - start[0]} bytes ({facts} of them facts)")
    return problems


def _timelines_of_values(run: Run, values: list[str]) -> None:
    """Print the timeline of each object that ``values`` (each added by more than one commit)
    were written to, so a run shows why without its files (pytest keeps few of them)."""
    objects = {(ns, name) for _, _, ns, name, value in run.editor.history if value in values}
    for tenant in run.tenants:
        for ns, name in sorted(o for o in objects if o[0] == tenant.ns):
            say(f"{ns}/{name}: a value of it added by more than one commit")
            mine = {v for _, _, n, o, v in run.editor.history if (n, o) == (ns, name) and v}
            for value in sorted(mine & set(values)):
                found = tenant.tenant.git("log", "--format=%h %at %an: %s", "-G", value, "main")
                say(f"  commits changing a line with {value}: {found.splitlines()}")
            timeline(
                tenant,
                name,
                history=run.editor.history,
                stamps=run.stamps.stamps(),
                flux=run.flux,
                kills=run.chaos.log,
                say=say,
            )


def _losses(
    tenants: list[ApplierTenant],
    editor: Editor,
    seen: list[losses.Collision],
    *,
    cluster: bool,
) -> list[losses.Loss]:
    """Every object whose editor's last write Git (and, with ``cluster``, the cluster) does not
    hold, classified (tests/soak/losses.py)."""
    last_edit: dict[tuple[str, str], float] = {}
    for at, _, ns, name, _ in editor.history:
        last_edit[(ns, name)] = at
    found: list[losses.Loss] = []
    for tenant in tenants:
        want = checks.expected(editor.final, tenant.ns)
        places = [("git", checks.git_objects(tenant))]
        places += [("cluster", checks.cluster_objects(tenant))] if cluster else []
        for where, have in places:
            for name in sorted(n for n in want.keys() | have.keys() if want.get(n) != have.get(n)):
                what = checks.differences(
                    {name: want[name]} if name in want else {},
                    {name: have[name]} if name in have else {},
                )
                kind, why = losses.classify(tenant.ns, name, last_edit.get((tenant.ns, name)), seen)
                found.append(losses.Loss(tenant.ns, name, where, what[0], kind, why))
    return found


def _worker_logs(running: System) -> list[Path]:
    """The branch workers' log files (every incarnation appends to one)."""
    return sorted((running.directory / "logs").glob("branch_worker*.log"))


def _ancestor(tenant: ApplierTenant, commit: str) -> bool:
    try:
        tenant.tenant.git("merge-base", "--is-ancestor", commit, "main")
    except subprocess.CalledProcessError:
        return False
    return True


def _flux_log(running: System) -> list[Record]:
    assert running.sbx.flux is not None, "the soak needs the sandbox's Flux doubles"
    return running.sbx.flux.log.records()
