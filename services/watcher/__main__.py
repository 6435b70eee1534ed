"""``python -m services.watcher [--burst]``: the watcher process.

Settings come from ``GITOPS_REVERSER_*`` variables; logs are JSON lines; ``/healthz``,
``/readyz`` (Redis and the Kubernetes API reachable) and ``/metrics`` are served on
``GITOPS_REVERSER_METRICS_PORT`` when it is not 0 (``shared.process``). The first
SIGTERM (or SIGINT) finishes the event in hand and exits; a second one exits at once.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

from services.watcher.app import Watcher, WatcherParts
from services.watcher.metrics import WatcherMetrics
from shared import process
from shared.health import Check
from shared.kube.clients import ClientFactory
from shared.kube.errors import KubeError
from shared.kube.health import ApiProbe
from shared.settings import Settings
from shared.store.attribution import AuditRoutes
from shared.store.commit_requests import CommitRequests
from shared.store.config import ConfigStore
from shared.store.connection import connect
from shared.store.health import RedisProbe
from shared.store.keys import Keys
from shared.store.ledger import Ledger
from shared.store.receivers import ReceiverDirectory
from shared.store.streams import EventStream
from shared.store.watches import WatchState

logger = logging.getLogger("services.watcher")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m services.watcher", description=__doc__)
    parser.add_argument(
        "--burst",
        action="store_true",
        help="one reconcile pass, drain every watch until idle, then exit",
    )
    return parser.parse_args(argv)


def _parts(settings: Settings) -> WatcherParts:
    """The watcher's adapters, as the environment configures them."""
    redis_client = connect(
        settings.redis_url, client_name="watcher", min_replicas=settings.redis_min_replicas
    )
    keys = Keys(settings.key_prefix)
    return WatcherParts(
        settings=settings,
        events=EventStream(redis_client, keys),
        config=ConfigStore(redis_client, keys),
        state=WatchState(redis_client, keys),
        factory=ClientFactory(settings, clock=time.time),
        metrics=WatcherMetrics(),
        ledger=Ledger(redis_client, keys),
        receivers=ReceiverDirectory(redis_client, keys),
        commit_requests=CommitRequests(
            redis_client, keys, settings.commit_request_ttl.total_seconds()
        ),
        audit_routes=AuditRoutes(redis_client, keys),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the watcher; returns the exit status."""
    args = _parse(argv)
    settings = process.start("watcher")
    parts = _parts(settings)
    probes = [
        Check("redis", RedisProbe(settings.redis_url)),
        Check("kubernetes", ApiProbe(parts.factory)),
    ]
    process.serve(settings, probes)
    watcher = Watcher(parts, burst=args.burst)
    process.Shutdown(watcher.request_stop).install()
    try:
        if args.burst:
            watcher.run_burst()
        else:
            watcher.run()
    except KubeError as err:
        logger.error("cannot reach the cluster: %s", err)
        return process.EXIT_FAILED
    finally:
        watcher.close()
    return process.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
