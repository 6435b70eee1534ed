"""Start-up and shutdown, the same for every process of the product.

Each process (watcher, branch worker, dispatcher; the receiver's gunicorn config takes only the
settings, since gunicorn owns its signals, logs and HTTP server) starts the same way: read
``Settings`` once (an invalid value stops the process with exit status 2 and one line on stderr
that names the variable, never a traceback), log JSON lines at the configured level, and, once
its clients exist, serve ``/healthz``, ``/readyz`` and ``/metrics`` on
``GITOPS_REVERSER_METRICS_PORT`` (``serve``; ``shared.health``). Each
stops the same way: the first SIGTERM or SIGINT asks the process to finish the unit of work in
hand and exit 0; a second one exits at once with ``128 + signal number``, the shell's
convention, so a supervisor can tell "stopped cleanly" from "cut short".
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import NoReturn, TextIO

from shared import health
from shared import logging as json_logging
from shared.settings import Settings, SettingsError

#: The process finished its work, or stopped cleanly after the first signal.
EXIT_OK = 0
#: The process could not do its work (an unreachable cluster, say); its log says why.
EXIT_FAILED = 1
#: A ``GITOPS_REVERSER_*`` variable holds a value the process cannot run with.
EXIT_SETTINGS = 2

logger = logging.getLogger("shared.process")


def signal_exit_code(signum: int) -> int:
    """The exit status of a process cut short by ``signum`` (the shell's ``128 + n``)."""
    return 128 + signum


def exit_at_once(signum: int) -> NoReturn:
    """Leave now, skipping clean-up: the operator asked twice and will not wait."""
    os._exit(signal_exit_code(signum))


def load_settings_or_exit(
    name: str, environ: Mapping[str, str] | None = None, stderr: TextIO | None = None
) -> Settings:
    """The process's Settings, or exit status 2 with one line that names the bad variable."""
    try:
        return Settings.from_env(environ)
    except SettingsError as err:
        print(f"{name}: {err}", file=stderr or sys.stderr)
        raise SystemExit(EXIT_SETTINGS) from None


def start(name: str) -> Settings:
    """Settings loaded and JSON logs set up."""
    settings = load_settings_or_exit(name)
    json_logging.configure(settings.log_level)
    return settings


def serve(settings: Settings, checks: list[health.Check]) -> health.Server | None:
    """``/healthz``, ``/readyz`` (``checks``) and ``/metrics`` on the metrics port (0 = off)."""
    if not settings.metrics_port:
        return None
    server = health.serve(settings.metrics_port, health.Health(checks))
    logger.info("serving /healthz, /readyz and /metrics on port %d", server.port)
    return server


class Shutdown:
    """The SIGTERM/SIGINT handler: the first asks for a clean stop, the second exits at once.

    ``on_first`` is how a process finishes the unit in hand (setting its stop event, say); it
    runs in the signal handler, so it must only flip state, never block.
    """

    def __init__(
        self,
        on_first: Callable[[], None],
        exit_now: Callable[[int], NoReturn] = exit_at_once,
    ) -> None:
        self._on_first = on_first
        self._exit_now = exit_now
        self._requested = False

    @property
    def requested(self) -> bool:
        """Whether a first signal has arrived."""
        return self._requested

    def __call__(self, signum: int, frame: FrameType | None = None) -> None:
        """Handle one SIGTERM or SIGINT."""
        if self._requested:
            self._exit_now(signum)
        self._requested = True
        logger.info("signal %d: finishing the work in hand", signum)
        self._on_first()

    def install(self) -> None:
        """Make this the handler of SIGTERM and SIGINT (call from the main thread)."""
        signal.signal(signal.SIGTERM, self)
        signal.signal(signal.SIGINT, self)
