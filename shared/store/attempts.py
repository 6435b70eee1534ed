"""Sending apply attempts (rq jobs on ``apply-attempts``) and their outcomes (a stream).

The queue's name is formed under the key prefix (``Keys.apply_queue``), so two installs that
share one Redis each work only their own attempts (O4).

The attempt is recorded in the applier before the job is enqueued, so a crash between the two
leaves an attempt that is handed back after its deadline (never one sent twice); the job id is
derived from the token, so one token is one job (D1). rq job ids may hold only letters,
digits, ``_`` and ``-`` (facts: webhooks-git-libs.md §3.1).
"""

from __future__ import annotations

import logging
import re
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any, NoReturn

import redis
from rq import Queue, SimpleWorker
from rq.exceptions import StopRequested

from shared.model.ids import BranchKey
from shared.model.ledger import LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.bells import Bells, ring_lua
from shared.store.connection import MadeClient
from shared.store.durable import acknowledged
from shared.store.errors import REDIS_DOWN
from shared.store.keys import Keys
from shared.store.ledger import KEYS_PER_UID, ledger_keys, record_lua

log = logging.getLogger(__name__)

#: The dispatcher's job entry point, named by path so the branch worker never imports it.
JOB_FUNCTION = "services.dispatcher.jobs.attempt"
#: An attempt waits up to 5 minutes for the applier (D6); the job may run a little longer.
JOB_TIMEOUT_S = 360
#: Keep finished jobs briefly for rq-dashboard; outcomes travel through the stream. The
#: defaults of ``Settings.job_result_ttl`` and ``Settings.job_failure_ttl``.
RESULT_TTL_S = 600
FAILURE_TTL_S = 86_400
_SAFE = re.compile(r"[^A-Za-z0-9_-]")
#: Pause before a new rq worker after the last one left its loop with Redis away (C9).
OUTAGE_PAUSE_S = 1.0


def guard_ttl_s(failure_ttl_s: int) -> int:
    """How long a token's outcome guard lives: as long as a run of its job can still report.
    A failed job stays requeueable (rq-dashboard) for ``failure_ttl_s`` from its failure,
    which comes at most the job timeout after the report; a finished job never runs again.
    So the guard outlives every run that could report a second outcome (D1), and is bounded
    by the failure TTL: lowering that setting is what bounds the guards' memory."""
    return failure_ttl_s + JOB_TIMEOUT_S


# KEYS[1] the token's outcome guard, KEYS[2] the branch's outcomes stream, KEYS[3] the branch's
# lease (its holder's doorbell is rung: ``shared.store.bells``), KEYS[4..] the ledger
# entries of the GitTargets served (S3), each followed by its recent list, its counts and the
# two sets of changed keys (``ledger_keys``); ARGV[1] guard TTL,
# ARGV[2] the ledger entry's JSON (empty: no ledger), ARGV[3] the branch key, then the
# outcome's field/value pairs.
# The first time only, writes the ledger and adds the outcome in one script (one MULTI/EXEC
# in the AOF), so no crash can leave an outcome the branch consumes without the ledger entry
# the apply window reads (W1);
# returns 1 or 0.
_REPORT_ONCE = (
    f"""
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  for i = 4, #KEYS, {KEYS_PER_UID} do
"""
    + record_lua("i", 2)
    + """
  end
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', unpack(ARGV, 4))
  ring(KEYS[3], ARGV[3])
  return 1
end
return 0
"""
)


def job_id(token: str) -> str:
    """The rq job id of a request token."""
    return "attempt-" + _SAFE.sub("-", token)


class Attempts:
    """Enqueue attempts; publish and consume outcomes."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        queue: str,
        *,
        result_ttl_s: int = RESULT_TTL_S,
        failure_ttl_s: int = FAILURE_TTL_S,
    ) -> None:
        self._r = client
        self._result_ttl_s = result_ttl_s
        self._failure_ttl_s = failure_ttl_s
        self._keys = keys
        self._queue_name = keys.apply_queue(queue)
        self._report_once = client.register_script(ring_lua(keys) + _REPORT_ONCE)
        self._bells = Bells(client, keys)
        self._raw_client: redis.Redis | None = None

    def queue(self) -> Queue:
        """The rq queue (rq needs a client that does not decode responses)."""
        return Queue(self._queue_name, connection=self._raw())

    def _raw(self) -> redis.Redis:
        """A client like ours that does not decode (made once): a twin when ours was made
        from a URL (a Sentinel set's primary included), else one on a pool like ours."""
        if self._raw_client is None:
            if isinstance(self._r, MadeClient) and self._r.made is not None:
                self._raw_client = self._r.twin(decode_responses=False)
            else:
                self._raw_client = redis.Redis(connection_pool=self._raw_pool())
        return self._raw_client

    def _raw_pool(self) -> redis.ConnectionPool:
        kwargs = dict(self._r.connection_pool.connection_kwargs)
        kwargs["decode_responses"] = False
        pool_class: Any = self._r.connection_pool.connection_class
        return redis.ConnectionPool(connection_class=pool_class, **kwargs)

    def work(self, burst: bool, log_level: str, exit_now: Callable[[int], NoReturn]) -> None:
        """Run the jobs of the queue in this process until a signal (or, in a burst, none left).

        rq's worker owns SIGTERM/SIGINT while it runs: the first is its warm shutdown (the job in
        hand finishes); ``exit_now`` replaces its cold shutdown, so a second signal leaves the
        way every process of the product does. rq leaves its loop when Redis is away (a
        timeout, or any failure outside its dequeue), and a new rq worker cannot be made while
        it is (found by the failover tier: the dispatcher exited when its next rq worker was
        made before Sentinel had promoted a replica); the process rides both out (C9): it
        waits ``OUTAGE_PAUSE_S`` and starts a new rq worker, until a signal asks it to stop.
        Outside an rq worker's loop (before it installs its handlers, after it restores the
        defaults, during the pause) a signal is a clean stop too, not death by SIGTERM.
        """
        _SIGNALLED.clear()
        while True:
            _stop_on_signal()
            worker: _InProcessWorker | None = None
            try:
                queue = self.queue()
                # rq's worker names its connection at construction (CLIENT SETNAME): with
                # Redis still away (a failover not finished, a restart still loading) that
                # is an outage like any other, not the end of the process (C9)
                worker = _InProcessWorker([queue], connection=queue.connection)
                worker.exit_now = exit_now
                worker.work(burst=burst, logging_level=log_level)
            except REDIS_DOWN as err:  # rq's teardown writes to Redis too
                log.warning("rq worker ended: Redis unreachable (%s)", err)
            except StopRequested:  # a signal before rq's own handlers were installed
                return
            if burst or (worker is not None and worker._shutdown_requested_date is not None):
                return
            _stop_on_signal()
            log.warning("rq worker left its loop; starting another in %.0f s", OUTAGE_PAUSE_S)
            try:
                threading.Event().wait(OUTAGE_PAUSE_S)
            except StopRequested:  # a signal came between two rq workers
                return

    def enqueue(self, request: ApplyRequest) -> None:
        """Send one attempt to the dispatchers."""
        self.queue().enqueue(
            JOB_FUNCTION,
            request.to_json(),
            job_id=job_id(request.token),
            job_timeout=JOB_TIMEOUT_S,
            result_ttl=self._result_ttl_s,
            failure_ttl=self._failure_ttl_s,
            description=f"{request.applier.kind} {request.applier.namespace}/"
            f"{request.applier.name} {'+'.join(request.reasons)} @ {request.commit[:8]}",
        )

    def report_once(
        self,
        bk: BranchKey,
        outcome: AttemptOutcome,
        *,
        served: Iterable[str] = (),
        last_request: LastRequest | None = None,
    ) -> bool:
        """Report a token's outcome unless one was reported already; True when this one was.

        With ``last_request``, the ledger entry of every GitTarget uid in ``served`` (S3, what
        ``Ledger.record`` writes) is set in the same script, before the outcome is visible:
        the branch worker never sees the attempt finished while the ledger still names an
        older request (the apply window it judges by, W1), and a crash loses neither."""
        ledgers = ledger_keys(self._keys, sorted(set(served)))
        if last_request is None:
            ledgers = []
        keys = [
            self._keys.outcome_guard(outcome.token),
            self._keys.branch_outcomes(bk),
            self._keys.branch_lease(bk),
            *ledgers,
        ]
        entry = last_request.to_json() if last_request is not None else ""
        args: list[str | int] = [guard_ttl_s(self._failure_ttl_s), entry, bk]
        for name, value in outcome.to_fields().items():
            args += [name, value]
        with acknowledged(self._r) as r:  # the dispatcher's report survives a failover
            return bool(self._report_once(keys=keys, args=args, client=r))

    def report(self, bk: BranchKey, outcome: AttemptOutcome) -> None:
        """The dispatcher's one outcome for a token, onto the branch's outcomes stream (its
        owner's doorbell rung in the same transaction)."""
        with acknowledged(self._r) as r:
            pipe = r.pipeline(transaction=True)
            pipe.xadd(self._keys.branch_outcomes(bk), outcome.to_fields(), maxlen=10_000)  # type: ignore[arg-type]
            self._bells.ring(pipe, bk)
            pipe.execute()

    def outcomes(self, bk: BranchKey) -> list[tuple[str, AttemptOutcome | None]]:
        """Every outcome not yet consumed (None where an entry is malformed)."""
        raw: Any = self._r.xrange(self._keys.branch_outcomes(bk))
        result: list[tuple[str, AttemptOutcome | None]] = []
        for entry_id, fields in raw:
            try:
                result.append((entry_id, AttemptOutcome.from_fields(fields)))
            except ValueError:
                result.append((entry_id, None))
        return result

    def waiting(self, bks: Sequence[BranchKey]) -> set[BranchKey]:
        """The branches among ``bks`` with an outcome not yet consumed, in one call (the owner
        consumes every outcome it reads, so any entry left is new)."""
        if not bks:
            return set()
        by_key = {self._keys.branch_outcomes(bk): bk for bk in bks}
        streams: dict[Any, Any] = dict.fromkeys(by_key, "0-0")
        reply: Any = self._r.xread(streams, count=1)
        return {by_key[key] for key, messages in reply or [] if messages}

    def consumed(self, bk: BranchKey, entry_ids: list[str]) -> None:
        """Remove outcomes whose effect is stored in the applier."""
        if entry_ids:
            self._r.xdel(self._keys.branch_outcomes(bk), *entry_ids)


#: Set by a SIGTERM/SIGINT that came before an rq worker installed its own handlers. The
#: StopRequested raised for it can be swallowed: a signal that lands while a log line is being
#: written raises inside logging's ``emit``, which catches every exception and prints "Logging
#: error" (rq logs "Listening on" just before it installs its handlers). The worker reads the
#: flag once its handlers are in, so such a signal still stops the process (found by the
#: Sentinel tests: an idle dispatcher signalled right after it started never stopped).
_SIGNALLED = threading.Event()


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    _SIGNALLED.set()
    raise StopRequested


def _stop_on_signal() -> None:
    """SIGTERM/SIGINT raise StopRequested until an rq worker installs its own handlers."""
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)


class _InProcessWorker(SimpleWorker):
    """rq's worker, running each job in this process (no fork), with our second signal.

    An attempt is mostly waiting on the applier, and one process keeps the Kubernetes and Redis
    connections and the metrics of every job.
    """

    exit_now: Callable[[int], NoReturn]

    def _install_signal_handlers(self) -> None:
        """rq's handlers; then a signal that came before them (``_SIGNALLED``) is a warm
        shutdown request, seen by rq's loop before it dequeues anything."""
        super()._install_signal_handlers()  # type: ignore[no-untyped-call]
        if _SIGNALLED.is_set():
            log.info("a stop was asked for while the rq worker started: stopping")
            self._stop_requested = True
            self._shutdown_requested_date = datetime.now(UTC)

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """A second signal during the warm shutdown: leave at once."""
        self.exit_now(signum)
