"""``python -m services.dispatcher [--burst]``: an rq worker on the ``apply-attempts`` queue.

Jobs run in this process (``shared.store.attempts.Attempts.work``): an attempt is mostly waiting
on Flux, and one process keeps the Kubernetes and Redis connections and the metrics of every
job. Start-up is ``shared.process``'s, with ``/healthz``, ``/readyz`` (Redis and the
Kubernetes API reachable) and ``/metrics`` on the metrics port; the first SIGTERM is rq's warm
shutdown (the attempt in hand finishes, then the worker exits 0), a second one exits at once.
"""

from __future__ import annotations

import argparse
import sys
import time

from shared import process
from shared.health import Check
from shared.kube.clients import ClientFactory
from shared.kube.health import ApiProbe
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.health import RedisProbe
from shared.store.keys import Keys


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m services.dispatcher")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    args = parser.parse_args(argv)
    settings = process.start("dispatcher")
    client = connect(
        settings.redis_url, client_name="dispatcher", min_replicas=settings.redis_min_replicas
    )
    # The jobs build their own clients; this one only answers the readiness probe.
    api = ApiProbe(ClientFactory(settings, time.time))
    process.serve(
        settings, [Check("redis", RedisProbe(settings.redis_url)), Check("kubernetes", api)]
    )
    attempts = Attempts(client, Keys(settings.key_prefix), settings.apply_queue)
    attempts.work(args.burst, settings.log_level, process.exit_at_once)
    return process.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
