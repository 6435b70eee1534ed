"""``python -m sandbox up``: the local stand-ins for a cluster, in the foreground.

Starts the Kubernetes API server double (with the project's CRDs and the real Flux and Argo CD
CRDs), the Git host, the Flux source- and kustomize-controller doubles (``--no-flux`` to
leave them out) and the Argo CD application-controller double (``--no-argocd``), writes
``DIR/kubeconfig`` (context ``sandbox``) and, last, ``DIR/sandbox.json``
(URLs, ports, repositories), and stops cleanly on Ctrl-C or SIGTERM. The stand-ins themselves
are started by ``sandbox.stack``.

To try attribution (docs/attribution.md) without writing Python: ``--user NAME=TOKEN`` makes
the API double authenticate bearer tokens and writes ``DIR/kubeconfig-NAME`` for each user
(``kubectl --kubeconfig DIR/kubeconfig-alice ...`` edits as ``alice``; every user may do
everything, no RBAC is modelled for them, and ``DIR/kubeconfig`` is an administrator's), and
``--audit-webhook URL --audit-token TOKEN`` sends the API's audit events there, as
kube-apiserver's webhook backend does (the receiver's ``/audit-webhook/<route>``). The
doubles' pacing (``sandbox.flux.pacing``) is set with ``--flux-before-apply``,
``--flux-between-objects``, ``--argocd-before-apply`` and ``--argocd-between-objects``
(seconds; the defaults are the doubles' own).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from sandbox import demo, local
from sandbox.flux.pacing import (
    ARGOCD_BEFORE_APPLY_S,
    ARGOCD_BETWEEN_OBJECTS_S,
    FLUX_BEFORE_APPLY_S,
    FLUX_BETWEEN_OBJECTS_S,
    Pacing,
)
from sandbox.kube.audit import AuditWebhook
from sandbox.stack import DEFAULT_REPO, start
from sandbox.users import identities, parse_users, write_kubeconfigs


def _wait_for_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    stop.wait()


def up(args: argparse.Namespace) -> int:
    """Run the sandbox until a signal arrives."""
    directory = Path(args.dir)
    try:
        tokens = parse_users(args.user)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    running = start(
        directory,
        args.kube_port,
        args.git_port,
        tuple(args.repo or [DEFAULT_REPO]),
        flux=not args.no_flux,
        argocd=not args.no_argocd,
        identities=identities(tokens),
        flux_pacing=Pacing(args.flux_before_apply, args.flux_between_objects),
        argocd_pacing=Pacing(args.argocd_before_apply, args.argocd_between_objects),
        describe=False,
    )
    users = write_kubeconfigs(running.kube, directory, tokens)
    running.write_description()  # last: when it exists, the users' kubeconfigs do too
    for path in users:
        name = path.name.removeprefix("kubeconfig-")
        print(f"User {name}:  kubectl --kubeconfig {args.dir}/{path.name} ...", flush=True)
    print(
        f"Pacing:         Flux {args.flux_before_apply:g}s before an apply, "
        f"{args.flux_between_objects:g}s between objects; Argo CD "
        f"{args.argocd_before_apply:g}s, {args.argocd_between_objects:g}s",
        flush=True,
    )
    if args.audit_webhook:
        running.kube.set_audit_webhook(AuditWebhook(args.audit_webhook, token=args.audit_token))
        print(f"Audit events: POSTed to {args.audit_webhook}", flush=True)
    kubeconfig = args.dir + "/kubeconfig"
    print(
        f"Kubernetes API: {running.kube.url}   kubectl --kubeconfig {kubeconfig} get ns", flush=True
    )
    print(
        f"Git host:       {running.githost.url}   git clone "
        f"{running.githost.repo_url(running.repos[0])}",
        flush=True,
    )
    print(f"Details:        {args.dir}/sandbox.json  (Ctrl-C stops)", flush=True)
    try:
        _wait_for_signal()
    finally:
        running.stop()
    print("sandbox stopped", flush=True)
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sandbox``."""
    top = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    run = sub.add_parser("up", help="start the API double and the Git host in the foreground")
    run.add_argument("--dir", required=True, help="where kubeconfig, sandbox.json and repos go")
    run.add_argument("--kube-port", type=int, default=0, help="0 = a free port")
    run.add_argument("--git-port", type=int, default=0, help="0 = a free port")
    run.add_argument(
        "--repo", action="append", help=f"a repository to create (default {DEFAULT_REPO})"
    )
    run.add_argument("--no-flux", action="store_true", help="do not run the Flux controllers")
    run.add_argument(
        "--no-argocd", action="store_true", help="do not run the Argo CD application-controller"
    )
    run.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME=TOKEN",
        help="authenticate this bearer token as NAME; writes DIR/kubeconfig-NAME (repeatable)",
    )
    run.add_argument("--audit-webhook", help="POST the API's audit events here (a URL)")
    run.add_argument("--audit-token", default="", help="the bearer token those POSTs carry")
    for double, before, between in (
        ("flux", FLUX_BEFORE_APPLY_S, FLUX_BETWEEN_OBJECTS_S),
        ("argocd", ARGOCD_BEFORE_APPLY_S, ARGOCD_BETWEEN_OBJECTS_S),
    ):
        run.add_argument(
            f"--{double}-before-apply",
            type=float,
            default=before,
            metavar="SECONDS",
            help=f"pause before an apply's first object (default {before:g})",
        )
        run.add_argument(
            f"--{double}-between-objects",
            type=float,
            default=between,
            metavar="SECONDS",
            help=f"pause between two objects of an apply (default {between:g})",
        )
    run.set_defaults(func=up)
    demo = sub.add_parser("demo", help="run the product on the sandbox: an edit and a push")
    demo.add_argument("--dir", default=".demo", help="where everything goes (wiped first)")
    demo.add_argument(
        "--story",
        choices=("flux", "argocd", "both"),
        default="both",
        help="which applier's story to tell (default: both, Flux first)",
    )
    demo.set_defaults(func=_demo)
    local = sub.add_parser(
        "local", help="make up: Redis, the sandbox and every process until Ctrl-C"
    )
    local.add_argument("--dir", default=".up", help="where everything goes (wiped first)")
    local.add_argument("--skip", action="append", default=[], help="a Procfile entry not to run")
    local.add_argument("--user", action="append", default=[], metavar="NAME=TOKEN")
    local.add_argument("--attribution", action="store_true", help="audit webhook to the receiver")
    local.set_defaults(func=_local)
    return top


def _demo(args: argparse.Namespace) -> int:
    return demo.main(["--dir", args.dir, "--story", args.story])


def _local(args: argparse.Namespace) -> int:
    return local.main(
        [
            "--dir",
            args.dir,
            *(f"--skip={name}" for name in args.skip),
            *(f"--user={pair}" for pair in args.user),
            *(["--attribution"] if args.attribution else []),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sandbox``."""
    args = parser().parse_args(argv)
    result: int = args.func(args)
    return result
