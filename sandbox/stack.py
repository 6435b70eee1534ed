"""The sandbox's stand-ins started together: the API server double, the Git host, Flux, Argo CD.

``python -m sandbox up`` runs this in the foreground; the demo, the e2e harness and the
benchmarks start it in their own process. Kept apart from the command line so that none of
them imports another's entry point.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from sandbox.argocd import ArgoCDController
from sandbox.flux import FluxControllers
from sandbox.flux.pacing import Pacing
from sandbox.githost import GitHost
from sandbox.kube.access import AccessRule
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files

#: The repository a new user clones first.
DEFAULT_REPO = "demo"


@dataclass(frozen=True, slots=True)
class Identities:
    """Who may do what on the API server double (``sandbox.kube.access``).

    ``tokens`` map bearer tokens to users and ``rules`` allow requests; the kubeconfig the
    product reads carries ``product_token``, and the doubles and whoever drives the sandbox
    (tests, the demo) use ``admin_token``, whose user the rules must allow everything.
    """

    tokens: dict[str, str]
    rules: tuple[AccessRule, ...]
    product_token: str
    admin_token: str
    #: The token the Flux doubles act with (None: ``admin_token``). Flux's controllers run as
    #: service accounts of their own (kustomize-controller as
    #: ``system:serviceaccount:flux-system:kustomize-controller``: the facts'
    #: upstream-gitops-reverser.md, attribution's email example), so an audit event of an
    #: apply names that user, not whoever drives the sandbox.
    flux_token: str | None = None


@dataclass(slots=True)
class Sandbox:
    """A running API server double and Git host, and where their files are."""

    directory: Path
    kube: KubeApiServer
    githost: GitHost
    repos: list[str]
    flux: FluxControllers | None = None
    argocd: ArgoCDController | None = None
    admin_token: str | None = None

    def api_client(self) -> client.ApiClient:
        """A client of the API server double as its administrator (any request allowed)."""
        return self.kube.api_client(self.admin_token)

    def write_description(self) -> None:
        """``sandbox.json``, whole (a new file renamed into place) and last: whoever waits for it
        finds everything it describes, and every file written before it, ready."""
        path = self.directory / "sandbox.json"
        partial = path.with_name("sandbox.json.partial")
        partial.write_text(json.dumps(self.describe(), indent=2) + "\n")
        partial.replace(path)

    def describe(self) -> dict[str, object]:
        """What ``sandbox.json`` holds: enough for a test or a person to reach everything."""
        return {
            "kube": {"url": self.kube.url, "port": self.kube.port},
            "git": {"url": self.githost.url, "port": self.githost.port},
            "kubeconfig": str(self.directory / "kubeconfig"),
            "repositories": {name: self.githost.repo_url(name) for name in self.repos},
        }

    def stop(self) -> None:
        """Stop the controllers' work, the servers, then the controllers' watches; the files
        in ``directory`` stay.

        The controllers finish the reconcile in hand first (``stopping``), while the servers
        answer, so nothing fails against a closed server. Then the API server goes: closing it
        ends the controllers' open watch streams, which a client cannot interrupt while no
        event arrives.
        """
        controllers = [c for c in (self.flux, self.argocd) if c is not None]
        for controller in controllers:
            controller.stopping()
        self.githost.stop()
        self.kube.stop()
        for controller in controllers:
            controller.stop()


def start(
    directory: Path,
    kube_port: int = 0,
    git_port: int = 0,
    repos: tuple[str, ...] = (DEFAULT_REPO,),
    flux: bool = True,
    *,
    argocd: bool = True,
    identities: Identities | None = None,
    flux_pacing: Pacing | None = None,
    argocd_pacing: Pacing | None = None,
    describe: bool = True,
) -> Sandbox:
    """Start the stand-ins and write ``kubeconfig`` and ``sandbox.json`` into ``directory``.

    ``describe=False`` leaves ``sandbox.json`` to the caller (``write_description``), which
    writes more files first (``python -m sandbox up``: the users' kubeconfigs).

    Without ``identities`` the API server double allows every request; with them the
    kubeconfig is the product's identity and the doubles act as the administrator. The
    pacings (``sandbox.flux.pacing``) default to the doubles' realistic ones; tests that need
    speed pass ``Pacing()``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if identities is None:
        kube = KubeApiServer(all_crd_files())
    else:
        kube = KubeApiServer(all_crd_files(), tokens=identities.tokens, rules=identities.rules)
    kube.start(port=kube_port)
    githost = GitHost(directory / "git")
    githost.start(port=git_port)
    for name in repos:
        githost.create_repo(name, files={"README.md": b"Managed by gitops-reverser.\n"})
    product = identities.product_token if identities else None
    kube.write_kubeconfig(directory / "kubeconfig", token=product, context="sandbox")
    admin = identities.admin_token if identities else None
    running = Sandbox(directory, kube, githost, list(repos), admin_token=admin)
    if flux:
        token = identities.flux_token if identities and identities.flux_token else admin
        running.flux = FluxControllers(
            kube.api_client(token), directory / "flux", pacing=flux_pacing
        )
        running.flux.start()
    if argocd:
        running.argocd = ArgoCDController(
            running.api_client(), directory / "argocd", pacing=argocd_pacing
        )
        running.argocd.start()
    if describe:
        running.write_description()
    return running
