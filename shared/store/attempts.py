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
from types import FrameType
from typing import Any, NoReturn

import redis
from rq import Queue, SimpleWorker
from rq.exceptions import StopRequested

from shared.model.ids import BranchKey, GitTargetUid
from shared.model.ledger import LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.store.errors import REDIS_DOWN
from shared.store.keys import Keys
from shared.store.ledger import record_lua

log = logging.getLogger(__name__)

#: The dispatcher's job entry point, named by path so the branch worker never imports it.
JOB_FUNCTION = "services.dispatcher.jobs.attempt"
#: An attempt waits up to 5 minutes for the applier (D6); the job may run a little longer.
JOB_TIMEOUT_S = 360
#: Keep finished jobs briefly for rq-dashboard; outcomes travel through the stream.
RESULT_TTL_S = 600
FAILURE_TTL_S = 86_400
_SAFE = re.compile(r"[^A-Za-z0-9_-]")
#: Pause before a new rq worker after the last one left its loop with Redis away (C9).
OUTAGE_PAUSE_S = 1.0
#: How long a token's outcome guard lives: far past any attempt's deadline.
OUTCOME_GUARD_TTL_S = 86_400

# KEYS[1] the token's outcome guard, KEYS[2] the branch's outcomes stream, KEYS[3..] the ledger
# entries of the GitTargets served (S3); ARGV[1] guard TTL, ARGV[2] the ledger entry's JSON
# (empty: no ledger), then the outcome's field/value pairs. The first time only, writes the
# ledger and adds the outcome in one script (one MULTI/EXEC in the AOF), so no crash can leave
# an outcome the branch consumes without the ledger entry the apply window reads (W1);
# returns 1 or 0.
_REPORT_ONCE = (
    """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  for i = 3, #KEYS do
"""
    + record_lua("i", 2)
    + """
  end
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', unpack(ARGV, 3))
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

    def __init__(self, client: redis.Redis, keys: Keys, queue: str) -> None:
        self._r = client
        self._keys = keys
        self._queue_name = keys.apply_queue(queue)
        self._report_once = client.register_script(_REPORT_ONCE)

    def queue(self) -> Queue:
        """The rq queue (rq needs a client that does not decode responses)."""
        raw = redis.Redis(connection_pool=self._raw_pool())
        return Queue(self._queue_name, connection=raw)

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
        timeout, or any failure outside its dequeue); the process rides that out (C9): it
        waits ``OUTAGE_PAUSE_S`` and starts a new rq worker, until a signal asks it to stop.
        Outside an rq worker's loop (before it installs its handlers, after it restores the
        defaults, during the pause) a signal is a clean stop too, not death by SIGTERM.
        """
        while True:
            _stop_on_signal()
            queue = self.queue()
            worker = _InProcessWorker([queue], connection=queue.connection)
            worker.exit_now = exit_now
            try:
                worker.work(burst=burst, logging_level=log_level)
            except REDIS_DOWN as err:  # rq's teardown writes to Redis too
                log.warning("rq worker ended: Redis unreachable (%s)", err)
            except StopRequested:  # a signal before rq's own handlers were installed
                return
            if burst or worker._shutdown_requested_date is not None:
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
            result_ttl=RESULT_TTL_S,
            failure_ttl=FAILURE_TTL_S,
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
        ledgers = [self._keys.ledger(GitTargetUid(uid)) for uid in sorted(set(served))]
        if last_request is None:
            ledgers = []
        keys = [self._keys.outcome_guard(outcome.token), self._keys.branch_outcomes(bk), *ledgers]
        entry = last_request.to_json() if last_request is not None else ""
        args: list[str | int] = [OUTCOME_GUARD_TTL_S, entry]
        for name, value in outcome.to_fields().items():
            args += [name, value]
        return bool(self._report_once(keys=keys, args=args))

    def report(self, bk: BranchKey, outcome: AttemptOutcome) -> None:
        """The dispatcher's one outcome for a token, onto the branch's outcomes stream."""
        self._r.xadd(self._keys.branch_outcomes(bk), outcome.to_fields(), maxlen=10_000)  # type: ignore[arg-type]

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


def _raise_stop(signum: int, frame: FrameType | None) -> None:
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

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """A second signal during the warm shutdown: leave at once."""
        self.exit_now(signum)
