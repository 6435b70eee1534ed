"""``python -m services.dispatcher [--burst]``: an rq worker on the ``apply-attempts`` queue.

Jobs run in this process (rq's SimpleWorker): an attempt is mostly waiting on Flux, and one
process keeps the Kubernetes and Redis connections and the metrics of every job. SIGTERM is
rq's warm shutdown: the attempt in hand finishes, then the worker exits.
"""

from __future__ import annotations

import argparse
import sys

from rq import SimpleWorker

from shared import logging as jsonlog
from shared import metrics
from shared.settings import Settings
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.keys import Keys


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m services.dispatcher")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    jsonlog.configure(settings.log_level)
    metrics.serve(settings.metrics_port)
    client = connect(settings.redis_url, client_name="dispatcher")
    queue = Attempts(client, Keys(settings.key_prefix), settings.apply_queue).queue()
    worker = SimpleWorker([queue], connection=queue.connection)
    worker.work(burst=args.burst, logging_level=settings.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
