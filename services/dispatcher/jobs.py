"""The rq job: ``attempt(request_json)`` makes one attempt and reports exactly one outcome (D1).

The job is what rq runs for each request the branch worker enqueues (by this module path,
``services.dispatcher.jobs.attempt``). Its connections are built once per dispatcher process
(``_context``), since every job of the process talks to the same Redis and clusters.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass

from services.dispatcher import attempt as attempts
from services.dispatcher import metrics
from services.dispatcher.facts import target_views
from services.dispatcher.mirrored import behind
from shared.decide.attempt import watch_wait
from shared.git.credentials import known_hosts_of, resolved_once
from shared.git.remote import ls_remote
from shared.kube.api import KubeClient
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.kinds import GIT_TARGETS
from shared.kube.status import StatusWriter
from shared.model.appliers import Reason
from shared.model.ids import BranchKey
from shared.model.ledger import LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.connection import Client, connect
from shared.store.errors import REDIS_DOWN
from shared.store.keys import Keys
from shared.store.ledger import Ledger
from shared.store.watches import WatchState

log = logging.getLogger(__name__)

#: How long ``finish`` keeps trying to report while Redis is away (C9). The outcome and its
#: ledger entry are what the branch's apply window judges the apply by (W1): an attempt whose
#: report was dropped is handed back at its deadline with no trace of the apply that ran, and
#: the apply's late events are then mirrored over the API edits they reverted (the soak's
#: chaos-flux-0/cm-00000, seed 197924: Delivered while Redis was down, the delete re-created).
REPORT_RETRY_S = 60.0
REPORT_PAUSE_S = 0.5


@dataclass(frozen=True, slots=True)
class Context:
    """One dispatcher process's connections."""

    settings: Settings
    attempts: Attempts
    states: BranchStates
    configs: ConfigStore
    ledger: Ledger
    clusters: ClientFactory
    watches: WatchState

    @classmethod
    def build(cls, settings: Settings, client: Client, clusters: ClientFactory) -> Context:
        """The stores under ``settings.key_prefix`` on ``client``, and the clusters."""
        keys = Keys(settings.key_prefix)
        return cls(
            settings,
            Attempts(
                client,
                keys,
                settings.apply_queue,
                result_ttl_s=int(settings.job_result_ttl.total_seconds()),
                failure_ttl_s=int(settings.job_failure_ttl.total_seconds()),
            ),
            BranchStates(client, keys),
            ConfigStore(client, keys),
            Ledger(client, keys),
            clusters,
            WatchState(client, keys),
        )


@functools.cache
def _context() -> Context:
    settings = Settings.from_env()
    client = connect(
        settings.redis_url, client_name="dispatcher", min_replicas=settings.redis_min_replicas
    )
    return Context.build(settings, client, ClientFactory(settings, time.time))


def _pause(seconds: float) -> None:
    """Between two reads of the applier's status: a plain sleep that nothing interrupts.

    Nothing needs to: the first SIGTERM lets the attempt in hand run to its outcome (rq's warm
    shutdown), and a second leaves the process at once (``shared.process``), waits included.
    """
    time.sleep(seconds)


def attempt(request_json: str) -> str:
    """Make one attempt; returns the outcome's name (also kept by rq for the dashboard)."""
    ctx = _context()
    request = ApplyRequest.from_json(request_json)
    outcome = attempts.run(request, ports(ctx))
    finish(ctx, request, outcome)
    return outcome.outcome


def ports(ctx: Context) -> attempts.Ports:
    """The attempt's view of the world, for this process."""
    local = ctx.clusters.local()
    reader = CrdReader(local.client)

    def cluster_for(name: str) -> KubeClient:
        found = [c for c in reader.cluster_providers() if c.meta.name == name]
        cluster = ctx.clusters.for_provider(found[0]) if found else local
        return cluster.client

    def tip(request: ApplyRequest) -> str | None:
        # the same resolver as the branch worker's, so an SSH GitProvider's identity is sent (D3)
        config = ctx.configs.branch(BranchKey(request.branch_key))
        namespace, name = (config.provider_namespace, config.secret_name) if config else ("", "")
        hosts = known_hosts_of(reader.object_data, namespace, config.known_hosts if config else "")
        with resolved_once(reader.secret_data, namespace, name, hosts) as env:
            return ls_remote(request.url, request.branch, env)

    def stamped(request: ApplyRequest, reasons: dict[Reason, list[str]], plan: str) -> None:
        writer = StatusWriter(local.client, "gitops-reverser-dispatcher", time.time)
        message = (
            f"{'+'.join(reasons)} at {request.commit[:12]}: asked {request.applier.kind} "
            f"{request.applier.namespace}/{request.applier.name} ({plan})"
        )
        for view in target_views(request, reader).values():
            writer.record_event(GIT_TARGETS, view.meta, "Normal", "ApplyRequested", message)

    def late(request: ApplyRequest) -> list[str]:
        return behind(BranchKey(request.branch_key), ctx.configs, ctx.watches, cluster_for)

    return attempts.Ports(
        reader,
        cluster_for,
        tip,
        lambda bk: ctx.states.read(BranchKey(bk)),
        stamped,
        time.time,
        _pause,
        behind=late,
        watch_wait_s=watch_wait(ctx.settings.attempt_deadline.total_seconds()),
    )


def finish(ctx: Context, request: ApplyRequest, outcome: AttemptOutcome) -> None:
    """Report the one outcome with its ledger entry (S3), in one Redis script, and count it
    (O1). The ledger is written with the report, not after it: a crash between the two would
    lose the entry for good (the token's guard refuses a second report), and until it was
    written the branch's apply window would judge by the older request (W1)."""
    uids = {uid for held in request.reasons.values() for uid in held}
    entry = LastRequest.of(request, outcome)
    bk = BranchKey(request.branch_key)
    deadline = time.monotonic() + REPORT_RETRY_S
    while True:
        try:  # a retry after a lost reply finds the guard set: never a second outcome
            reported = ctx.attempts.report_once(bk, outcome, served=uids, last_request=entry)
            break
        except REDIS_DOWN as err:
            if time.monotonic() >= deadline:
                raise
            log.warning(
                "attempt %s: outcome not reported yet, Redis unreachable (%s); trying again",
                request.token,
                err,
                extra={"branch": bk, "token": request.token},
            )
            _pause(REPORT_PAUSE_S)
    if not reported:
        return  # an outcome for this token exists already: never a second one
    for reason in request.reasons:
        metrics.METRICS.apply_requests.labels(
            request.applier.kind.lower(), reason, outcome.outcome
        ).inc()
