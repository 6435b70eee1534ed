"""``python -m services.dispatcher [--burst]``: an rq worker on the ``apply-attempts`` queue.

Jobs run in this process (``shared.store.attempts.Attempts.work``): an attempt is mostly waiting
on Flux, and one process keeps the Kubernetes and Redis connections and the metrics of every
job. Start-up is ``shared.process``'s; the first SIGTERM is rq's warm shutdown (the attempt in
hand finishes, then the worker exits 0), a second one exits at once.
"""

from __future__ import annotations

import argparse
import sys

from shared import process
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.keys import Keys


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m services.dispatcher")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    args = parser.parse_args(argv)
    settings = process.start("dispatcher")
    client = connect(settings.redis_url, client_name="dispatcher")
    attempts = Attempts(client, Keys(settings.key_prefix), settings.apply_queue)
    attempts.work(args.burst, settings.log_level, process.exit_at_once)
    return process.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
