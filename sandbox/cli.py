"""``python -m sandbox up``: the local stand-ins for a cluster, in the foreground.

Starts the Kubernetes API server double (with the project's CRDs and the real Flux and Argo CD
CRDs), the Git host, and the Flux source- and kustomize-controller doubles (``--no-flux`` to
leave them out), writes ``DIR/kubeconfig`` (context ``sandbox``) and ``DIR/sandbox.json``
(URLs, ports, repositories), and stops cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from sandbox.flux import FluxControllers
from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files

#: The repository a new user clones first.
DEFAULT_REPO = "demo"


@dataclass(slots=True)
class Sandbox:
    """A running API server double and Git host, and where their files are."""

    directory: Path
    kube: KubeApiServer
    githost: GitHost
    repos: list[str]
    flux: FluxControllers | None = None

    def describe(self) -> dict[str, object]:
        """What ``sandbox.json`` holds: enough for a test or a person to reach everything."""
        return {
            "kube": {"url": self.kube.url, "port": self.kube.port},
            "git": {"url": self.githost.url, "port": self.githost.port},
            "kubeconfig": str(self.directory / "kubeconfig"),
            "repositories": {name: self.githost.repo_url(name) for name in self.repos},
        }

    def stop(self) -> None:
        """Stop the servers, then the controllers; the files in ``directory`` stay.

        The API server goes first: closing it ends the controllers' open watch streams, which
        a client cannot interrupt while no event arrives.
        """
        self.githost.stop()
        self.kube.stop()
        if self.flux is not None:
            self.flux.stop()


def start(
    directory: Path,
    kube_port: int = 0,
    git_port: int = 0,
    repos: tuple[str, ...] = (DEFAULT_REPO,),
    flux: bool = True,
) -> Sandbox:
    """Start the stand-ins and write ``kubeconfig`` and ``sandbox.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    kube = KubeApiServer(all_crd_files())
    kube.start(port=kube_port)
    githost = GitHost(directory / "git")
    githost.start(port=git_port)
    for name in repos:
        githost.create_repo(name, files={"README.md": b"Managed by gitops-reverser.\n"})
    kube.write_kubeconfig(directory / "kubeconfig", context="sandbox")
    running = Sandbox(directory, kube, githost, list(repos))
    if flux:
        running.flux = FluxControllers(kube.api_client(), directory / "flux")
        running.flux.start()
    (directory / "sandbox.json").write_text(json.dumps(running.describe(), indent=2) + "\n")
    return running


def _wait_for_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    stop.wait()


def up(args: argparse.Namespace) -> int:
    """Run the sandbox until a signal arrives."""
    running = start(
        Path(args.dir),
        args.kube_port,
        args.git_port,
        tuple(args.repo or [DEFAULT_REPO]),
        flux=not args.no_flux,
    )
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
    run.set_defaults(func=up)
    demo = sub.add_parser("demo", help="run the product on the sandbox: an edit and a push")
    demo.add_argument("--dir", default=".demo", help="where everything goes (wiped first)")
    demo.set_defaults(func=_demo)
    return top


def _demo(args: argparse.Namespace) -> int:
    from sandbox.demo import main as demo_main  # the demo imports this module

    return demo_main(["--dir", args.dir])


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sandbox``."""
    args = parser().parse_args(argv)
    result: int = args.func(args)
    return result
