"""``python -m tests.integration.dispatcher.crashing STEP JOURNAL``: a dispatcher that dies.

The test seam of ``test_dispatcher_crashes`` (C9, D1, A4): the dispatcher's own job loop
(``Attempts.work`` in burst mode, as ``python -m services.dispatcher --burst`` runs it) with
the steps of an attempt wrapped. Each wrapper appends one line to ``JOURNAL`` (``start``,
``stamped`` with the token) so the test counts what every process did, and at ``STEP`` the
process leaves with ``os._exit(CRASHED)``: no cleanup, no ``finally``, as a SIGKILL would.

Steps, in the order an attempt takes them (services/dispatcher/attempt.py, jobs.py):
``read-tip`` (the last read before the stamp), ``stamped`` (the applier was stamped, nothing
reported), ``reported`` (the outcome is on the branch's stream, the rq job not yet finished),
``none`` (a healthy dispatcher).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from services.dispatcher import jobs
from shared.model.appliers import Reason
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.settings import Settings
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.keys import Keys

CRASHED = 17
STEPS = ("read-tip", "stamped", "reported", "none")


def main(step: str, journal: Path) -> int:
    """Run the queue's jobs until it is empty, dying at ``step``."""
    assert step in STEPS, step

    def note(what: str, token: str) -> None:
        with journal.open("a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {what} {token}\n")

    real_ports, real_finish, real_attempt = jobs.ports, jobs.finish, jobs.attempt

    def ports(ctx: jobs.Context) -> jobs.attempts.Ports:
        wired = real_ports(ctx)

        def tip(request: ApplyRequest) -> str | None:
            if step == "read-tip":
                os._exit(CRASHED)
            return wired.tip(request)

        def stamped(request: ApplyRequest, reasons: dict[Reason, list[str]], plan: str) -> None:
            note("stamped", request.token)
            if step == "stamped":
                os._exit(CRASHED)
            wired.stamped(request, reasons, plan)

        return dataclasses.replace(wired, tip=tip, stamped=stamped, poll_s=0.1)

    def finish(ctx: jobs.Context, request: ApplyRequest, outcome: AttemptOutcome) -> None:
        real_finish(ctx, request, outcome)
        if step == "reported":
            os._exit(CRASHED)

    def attempt(request_json: str) -> str:
        note("start", ApplyRequest.from_json(request_json).token)
        return real_attempt(request_json)

    jobs.ports, jobs.finish, jobs.attempt = ports, finish, attempt  # type: ignore[assignment]
    settings = Settings.from_env()
    client = connect(settings.redis_url, client_name="dispatcher")
    Attempts(client, Keys(settings.key_prefix), settings.apply_queue).work(
        True, "WARNING", os._exit
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
