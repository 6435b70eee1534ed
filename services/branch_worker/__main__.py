"""``python -m services.branch_worker [run|inspect] [--burst]``: run a branch-worker process.

``inspect`` prints what each branch holds and each applier is owed, and why it waits (O3).

At start, the work folders of this host's earlier worker processes are removed (``workdirs``).

``/healthz``, ``/readyz`` (Redis and the Kubernetes API reachable, and the leases renewed on
time) and ``/metrics`` are served on the metrics port (``shared.process``).

SIGTERM or SIGINT: let the passes running on the pool finish, publish open windows (the
heartbeat keeps the leases meanwhile), release the leases and exit; a second signal exits at
once (``shared.process``).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from pathlib import Path

from services.branch_worker import workdirs
from services.branch_worker.applied import AppliedRevisions
from services.branch_worker.credentials import SecretCredentials
from services.branch_worker.inspect import report
from services.branch_worker.postbuild import PostBuildReader
from services.branch_worker.signing import SecretSigner
from services.branch_worker.worker import BranchWorker, Stores
from services.branch_worker.worktree import TreeFactory, WorkTree
from shared import process
from shared.health import Check
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.health import ApiProbe
from shared.store.connection import connect
from shared.store.health import RedisProbe


def _with_renders(trees: TreeFactory, renders: PostBuildReader) -> TreeFactory:
    """The product's work trees read each Kustomization's postBuild variables (the
    render-fidelity gate); another factory (the benchmarks') is used as it is."""
    if trees is not WorkTree:
        return trees
    return lambda workspace: WorkTree(workspace, renders=renders)


def main(
    argv: list[str] | None = None, *, trees: TreeFactory = WorkTree, apply_window: bool = True
) -> int:
    """Entry point (``trees``: how each branch's work tree is built; the benchmarks run this
    process with a plain writer of their own, ``bench.plain``. ``apply_window``: W1's guard,
    always on in the product; the e2e tests run a process without it,
    ``tests.e2e.window_off_worker``)."""
    parser = argparse.ArgumentParser(prog="python -m services.branch_worker")
    parser.add_argument(
        "command",
        nargs="?",
        choices=("run", "inspect"),
        default="run",
        help="run a worker (default), or print what each branch and applier holds (O3)",
    )
    parser.add_argument("--burst", action="store_true", help="exit once nothing is left to do")
    hostname = socket.gethostname()
    parser.add_argument("--id", default=f"{hostname}-{os.getpid()}")
    args = parser.parse_args(argv)
    if args.command == "inspect":
        settings = process.load_settings_or_exit("branch_worker inspect")
        stores = Stores.build(connect(settings.redis_url, client_name="inspect"), settings)
        print(report(stores))
        return process.EXIT_OK
    settings = process.start("branch_worker")
    workdirs.remove_stale(Path(settings.work_dir), hostname, args.id)  # N12
    client = connect(
        settings.redis_url,
        client_name=f"branch-worker:{args.id}",
        min_replicas=settings.redis_min_replicas,
    )
    stores = Stores.build(client, settings)
    factory = ClientFactory(settings, time.time)
    reader = lambda: CrdReader(factory.local().client)  # noqa: E731
    credentials = SecretCredentials(reader, stores.configs)
    signer = SecretSigner(reader)
    worker = BranchWorker(
        settings,
        stores,
        args.id,
        time.time,
        credentials=credentials,
        signer=signer,
        trees=_with_renders(trees, PostBuildReader(reader, factory)),
        applied=AppliedRevisions(reader, factory),
        apply_window=apply_window,
    )
    checks = [
        Check("redis", RedisProbe(settings.redis_url)),
        Check("kubernetes", ApiProbe(factory)),
        Check("leases", worker.heartbeat.renewal_problem),
    ]
    process.serve(settings, checks)
    stop = threading.Event()
    process.Shutdown(stop.set).install()
    try:
        worker.run(stop, burst=args.burst)
    finally:
        credentials.close()  # no SSH key outlives the process (T3)
    return process.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
