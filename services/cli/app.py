"""The command line of ``gitops-reverser`` (and ``kubectl gitops-reverser``): docs/cli.md.

Global flags are accepted before or after the subcommand, as kubectl accepts them. Errors go
to stderr as one line, with kubectl's exit codes (``services.cli.errors``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime

from services.branch_worker.inspect import report
from services.cli import analyze, check, convert, get, targets, trace
from services.cli.context import Context
from services.cli.errors import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, CliError
from services.cli.output import FORMATS
from shared.git.errors import GitError
from shared.kube.errors import KubeError, NotFound
from shared.store.errors import StoreUnavailable

#: ``get``'s kinds and the names kubectl users type for them.
KIND_NAMES = {
    "targets": "targets",
    "target": "targets",
    "gittargets": "targets",
    "gt": "targets",
    "providers": "providers",
    "provider": "providers",
    "gitproviders": "providers",
    "gp": "providers",
    "rules": "rules",
    "rule": "rules",
    "watchrules": "rules",
    "wr": "rules",
}


def _global_flags(suppress: bool) -> argparse.ArgumentParser:
    """The flags every subcommand takes; ``suppress`` leaves unset ones out of the namespace
    (so a flag given before the subcommand is not reset by the subcommand's parser)."""
    default = argparse.SUPPRESS if suppress else None
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--kubeconfig", default=default, help="kubeconfig file (else KUBECONFIG)")
    flags.add_argument("--context", default=default, help="kubeconfig context (else current)")
    flags.add_argument("-n", "--namespace", default=default, help="namespace (else the context's)")
    flags.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        default=default or False,
        help="every namespace (get)",
    )
    flags.add_argument(
        "-o", "--output", choices=FORMATS, default=default or "table", help="output format"
    )
    flags.add_argument("--redis-url", default=default, help="the install's Redis (else found)")
    flags.add_argument("--key-prefix", default=default, help="its key prefix (else found)")
    flags.add_argument(
        "--redis-address",
        default=default,
        help="host:port to reach the found Redis at (kubectl port-forward)",
    )
    flags.add_argument(
        "--install-namespace",
        default=default or "",
        help="namespace of the install whose Redis to use (when several)",
    )
    return flags


def _target_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    helptext: str,
    flags: argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=helptext, parents=[flags])
    parser.add_argument("kind", choices=("target", "gittarget", "gt"))
    parser.add_argument("name", help="the GitTarget's name")
    return parser


def parser() -> argparse.ArgumentParser:
    """The whole command line."""
    top = argparse.ArgumentParser(
        prog="gitops-reverser", description=__doc__, parents=[_global_flags(False)]
    )
    flags = _global_flags(True)
    sub = top.add_subparsers(dest="command", required=True)
    g = sub.add_parser("get", help="GitTargets, GitProviders or WatchRules", parents=[flags])
    g.add_argument("kind", choices=sorted(KIND_NAMES))
    _target_command(sub, "suspend", "set a GitTarget's spec.suspend", flags)
    _target_command(sub, "resume", "unset a GitTarget's spec.suspend", flags)
    for name, helptext in (
        ("reconcile", "ask the watcher to handle a GitTarget now"),
        ("commit", "commit a GitTarget's open window (a CommitRequest)"),
    ):
        p = _target_command(sub, name, helptext, flags)
        p.add_argument("--wait", action="store_true", help="wait until it is done")
        p.add_argument("--timeout", type=float, default=targets.DEFAULT_TIMEOUT_S, help="seconds")
        if name == "commit":
            p.add_argument("-m", "--message", help="the commit message (else the template's)")
    t = sub.add_parser("trace", help="an object's file, commit and apply request", parents=[flags])
    t.add_argument("object", metavar="KIND/NAME")
    sub.add_parser("inspect", help="each branch's state and applier's debts", parents=[flags])
    c = sub.add_parser("check", help="CRDs, appliers, grants, Redis", parents=[flags])
    c.add_argument("--pre", action="store_true", help="before an install: a missing one is fine")
    a = sub.add_parser("analyze", help="what the writer would do with a folder", parents=[flags])
    a.add_argument("directory")
    v = sub.add_parser(
        "convert", help="the Go operator's manifests as ours (docs/migrating.md)", parents=[flags]
    )
    v.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        help="a file, a folder or - (stdin, also when none is given); repeatable",
    )
    return top


def _run(args: argparse.Namespace, ctx: Context) -> int:
    command = args.command
    if command == "get":
        return get.run(ctx, KIND_NAMES[args.kind])
    if command in ("suspend", "resume"):
        return targets.suspend(ctx, args.name, command == "suspend")
    if command == "reconcile":
        return targets.reconcile(ctx, args.name, args.wait, args.timeout)
    if command == "commit":
        return targets.commit(ctx, args.name, args.message, args.wait, args.timeout)
    if command == "trace":
        return trace.trace(ctx, args.object)
    if command == "inspect":
        print(report(ctx.stores()))
        return EXIT_OK
    if command == "check":
        return check.check(ctx, args.pre)
    if command == "convert":
        return convert.run(args.filename, "yaml" if ctx.output == "table" else ctx.output)
    return analyze.analyze(ctx, args.directory)


def main(argv: list[str] | None = None, clock: Callable[[], datetime] | None = None) -> int:
    """Entry point of ``gitops-reverser`` and ``kubectl-gitops_reverser``."""
    args = parser().parse_args(argv)
    ctx = Context(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespace=args.namespace,
        all_namespaces=args.all_namespaces,
        output=args.output,
        redis_url=args.redis_url,
        key_prefix=args.key_prefix,
        redis_address=args.redis_address,
        install_namespace=args.install_namespace,
    )
    if clock is not None:
        ctx.clock = clock
    try:
        return _run(args, ctx)
    except CliError as err:
        sys.stderr.write(f"error: {err}\n")
        return err.code
    except NotFound as err:
        sys.stderr.write(f"error: {err}\n")
        return EXIT_NOT_FOUND
    except (KubeError, GitError, StoreUnavailable) as err:
        sys.stderr.write(f"error: {err}\n")
        return EXIT_ERROR
