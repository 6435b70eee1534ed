"""The product's processes started from the Procfile, as a user starts them.

The demo and the e2e harness both run every process of the Procfile against the sandbox with
a private key prefix and short timings; this is that runner, kept apart from both so the tests
do not depend on the demo script.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from sandbox.paths import REPO_ROOT

#: How long a process may take to finish the work in hand after SIGTERM before SIGKILL.
STOP_S = 30.0


def free_port() -> int:
    """A TCP port nothing listens on right now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def procfile() -> dict[str, str]:
    """The Procfile's commands by name."""
    lines = (REPO_ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line and not line.startswith("#"))


def _print(text: str) -> None:
    print(text, flush=True)


class Processes:
    """The product's processes, started from the Procfile with one environment.

    ``say`` tells what happens (started, killed); the demo prefixes it, the tests just print.
    ``commands`` replaces the Procfile's (tests/image runs each process in a container).
    """

    def __init__(
        self,
        env: dict[str, str],
        logs: Path,
        say: Callable[[str], None] = _print,
        commands: Mapping[str, str] | None = None,
    ):
        self._env = env
        self._logs = logs
        self._say = say
        self._commands = commands
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, names: tuple[str, ...]) -> None:
        """Start the named Procfile entries (a restarted one appends to its log)."""
        commands = self._commands or procfile()
        self._logs.mkdir(parents=True, exist_ok=True)
        for name in names:
            log = (self._logs / f"{name}.log").open("ab")
            # exec: the shell gives way to the process, so a signal to the pid reaches it.
            self._procs[name] = subprocess.Popen(
                f"exec {commands[name].strip()}",
                shell=True,
                cwd=REPO_ROOT,
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self._say(f"started {name}: {commands[name].strip()}  (log: {self._logs / name}.log)")

    def running(self, name: str) -> bool:
        """Whether the named process was started and has not exited."""
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def pid(self, name: str) -> int | None:
        """The process id of the named process's session leader (None when not running).

        Each process runs in a session of its own (``start_new_session``), so this id is
        also the session id of the product process the shell started for it.
        """
        proc = self._procs.get(name)
        return proc.pid if proc is not None and proc.poll() is None else None

    def signal(self, name: str, signum: int, timeout: float = STOP_S) -> None:
        """Send ``signum`` to one process (its whole session) and wait until it has exited."""
        proc = self._procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signum)
        proc.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM every process; SIGKILL (its session) what has not stopped ``STOP_S`` later.

        SIGTERM goes to the process alone, as Kubernetes stops a container: a git command the
        branch worker runs for the work in hand finishes instead of dying of the same signal
        (which was logged as a failed branch, with a traceback, at the end of the demo)."""
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self._procs.items():
            try:
                proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                self._say(f"{name} did not stop in {STOP_S:.0f}s; killed")


def environment(directory: Path, receiver_port: int) -> dict[str, str]:
    """The processes' environment: the sandbox's kubeconfig, Redis, short timings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_REVERSER_")}
    prom = directory / "prometheus"
    shutil.rmtree(prom, ignore_errors=True)
    prom.mkdir(parents=True)
    env.update(
        {
            "GITOPS_REVERSER_REDIS_URL": os.environ.get(
                "GITOPS_REVERSER_REDIS_URL", "redis://127.0.0.1:6379/0"
            ),
            "GITOPS_REVERSER_KEY_PREFIX": f"demo:{uuid.uuid4().hex[:8]}",
            "GITOPS_REVERSER_KUBECONFIG": str(directory / "kubeconfig"),
            "GITOPS_REVERSER_WORK_DIR": str(directory / "work"),
            "GITOPS_REVERSER_STEADY_TICK": "5s",
            "GITOPS_REVERSER_RECONCILE_PERIOD": "2s",
            "GITOPS_REVERSER_RECEIVER_BIND": f"127.0.0.1:{receiver_port}",
            "GITOPS_REVERSER_RECEIVER_WORKERS": "1",
            "PROMETHEUS_MULTIPROC_DIR": str(prom),
            "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        }
    )
    return env
