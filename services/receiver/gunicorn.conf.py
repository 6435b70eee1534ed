"""gunicorn settings for the receiver: threads, no control socket, multiprocess metrics (R1).

- ``gthread`` workers, counts from ``Settings`` (``GITOPS_REVERSER_RECEIVER_WORKERS``/
  ``_THREADS``/``_CONNECTIONS``): a delivery spends most of its time waiting on Redis, so
  threads are cheap concurrency; the worker is ``services.receiver.worker.ReceiverWorker``,
  gunicorn's ``gthread`` with read and write deadlines (``_RECEIVER_READ_TIMEOUT``, C5), idle
  connections waiting in the poller (the oldest closed at the connection limit), JSON answers
  to what gunicorn refuses before the app runs (W2) and graceful closes off the loop thread
  (docs/receiver.md "Slow and idle clients");
- ``keepalive``: an idle kept-alive connection is closed after 2 s (gunicorn's default, named
  here because docs/receiver.md promises it); a new connection waits for its first byte in the
  poller, without a thread, for up to the read timeout (the worker's ``accept``);
- ``control_socket_disable``: gunicorn >= 25.1 opens a control socket under ``$HOME`` by
  default, which fails on a read-only root filesystem (facts: webhooks-git-libs.md §3.7);
- ``PROMETHEUS_MULTIPROC_DIR`` is wiped before the arbiter starts and a dead worker's live
  gauges are forgotten in ``child_exit`` (facts §3.5);
- JSON logs in every worker, gunicorn's own lines too (``logger_class``:
  ``services.receiver.gunicorn_logs.JsonLogger``); no access log by default (every refused
  answer is logged by the app with its reason), and a JSON one when asked for
  (``GUNICORN_CMD_ARGS=--access-logfile=-``);
- ``gc.freeze()`` once a worker has loaded the app: the objects of the imports (Flask, the
  Kubernetes client's models, ...) are never scanned again, so a full collection in the middle
  of a delivery costs little instead of tens of milliseconds.

Run: ``gunicorn -c services/receiver/gunicorn.conf.py "services.receiver.app:create_app()"``.
"""

# ruff: noqa: N999  (the name is gunicorn's convention and the Procfile's, not an import path)
from __future__ import annotations

import gc
from typing import Any

from shared import logging as json_logging
from shared import process
from shared.metrics import mark_worker_dead, wipe_multiprocess_dir
from shared.settings import prometheus_multiproc_dir

#: Read as every process reads them (``shared.process``): a bad value exits 2 with one line.
#: gunicorn owns the signals (TERM: graceful, INT/QUIT: quick) and serves ``/metrics`` itself.
_settings = process.load_settings_or_exit("receiver")

bind = [_settings.receiver_bind]
worker_class = "services.receiver.worker.ReceiverWorker"
workers = _settings.receiver_workers
threads = _settings.receiver_threads
worker_connections = _settings.receiver_connections
keepalive = 2
control_socket_disable = True
accesslog = None
logger_class = "services.receiver.gunicorn_logs.JsonLogger"
#: GitHub counts a delivery as failed after 10 s (facts §1.1); a worker silent for 30 s is hung.
timeout = 30


def on_starting(server: Any) -> None:
    """Before any worker exists: empty the multiprocess metrics directory, log as JSON."""
    json_logging.configure(_settings.log_level)
    directory = prometheus_multiproc_dir()
    if directory is not None:
        wipe_multiprocess_dir(directory)


def post_fork(server: Any, worker: Any) -> None:
    """In each new worker: JSON logs at the configured level."""
    json_logging.configure(_settings.log_level)


def post_worker_init(worker: Any) -> None:
    """The app is loaded: move everything alive now out of the collector's sight for good."""
    gc.collect()
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A worker is gone: drop its live gauges (its counters stay, so totals stay right)."""
    mark_worker_dead(int(worker.pid))
