"""The CLI against the sandbox's API double, a real Redis and a real Git host.

``Cli`` runs ``gitops-reverser`` in this process (``services.cli.app.main``) with a kubeconfig
of the API double, capturing stdout and stderr, so a test reads what a person reads and the
exit code a script reads. ``crd_files`` builds the CRDs the double serves: the chart's, with
the GitTarget CRD changed to have (or not have) the fields the CLI depends on and another
change adds to the chart (``spec.suspend``, ``status.lastHandledReconcileAt``), so both the
CRDs before and after that change are tested whichever the chart holds now.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, watch

from sandbox import manifests as m
from sandbox.kube.server import KubeApiServer
from sandbox.paths import CHART_CRDS, third_party_crd_files
from services.cli.app import main

GROUP, VERSION = "gitopsreverser.io", "v1alpha1"
GIT_TARGETS_CRD = "gitopsreverser.io_gittargets.yaml"
#: The instant the CLI's clock reads (``reconcile``'s request value is made from it).
NOW = datetime(2026, 12, 6, 9, 30, 15, 123456, tzinfo=UTC)


def crd_files(directory: Path, *, suspend: bool, handled: bool) -> list[Path]:
    """The chart's CRDs and the real Flux/Argo CD ones, the GitTarget CRD with ``spec.suspend``
    when ``suspend`` and ``status.lastHandledReconcileAt`` when ``handled`` (and without them
    otherwise)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for path in sorted(CHART_CRDS.glob("*.yaml")):
        if path.name != GIT_TARGETS_CRD:
            files.append(path)
            continue
        crd = yaml.safe_load(path.read_text())
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        spec, status = schema["spec"]["properties"], schema["status"]["properties"]
        spec.pop("suspend", None)
        status.pop("lastHandledReconcileAt", None)
        if suspend:
            spec["suspend"] = {"type": "boolean"}
        if handled:
            status["lastHandledReconcileAt"] = {"type": "string"}
        changed = directory / GIT_TARGETS_CRD
        changed.write_text(yaml.safe_dump(crd))
        files.append(changed)
    return files + third_party_crd_files()


@dataclass
class Result:
    """What one run printed and returned."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Cli:
    """``gitops-reverser`` with the sandbox's kubeconfig (and the test's Redis, if given)."""

    kubeconfig: Path
    redis: tuple[str, ...] = ()

    def __call__(self, *args: str, redis: bool = True) -> Result:
        out, err = io.StringIO(), io.StringIO()
        argv = ["--kubeconfig", str(self.kubeconfig), *(self.redis if redis else ()), *args]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv, clock=lambda: NOW)
        return Result(code, out.getvalue(), err.getvalue())


@dataclass
class Api:
    """The administrator's client of the API double, for the test's own objects."""

    api: client.ApiClient

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return m.create(self.api, body)

    def own(self, kind: str, ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }
        return self.create(body)

    def get(self, plural: str, ns: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, ns, plural, name
        )
        return found

    def status(self, plural: str, ns: str, name: str, status: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, ns, plural, name, {"status": status}
        )

    @contextlib.contextmanager
    def controller(
        self, plural: str, ns: str, act: Callable[[dict[str, Any]], bool]
    ) -> Iterator[threading.Thread]:
        """Play the product's controller: watch ``plural`` in ``ns`` on a thread and call
        ``act`` on each added or modified object until it returns True."""
        stream = watch.Watch()

        def run() -> None:
            for event in stream.stream(
                self.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                ns,
                plural,
                timeout_seconds=60,
            ):
                if event["type"] in ("ADDED", "MODIFIED") and act(event["object"]):
                    return

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield thread
        finally:
            stream.stop()


@contextlib.contextmanager
def sandbox_api(directory: Path, *, suspend: bool, handled: bool) -> Iterator[KubeApiServer]:
    """An API double serving ``crd_files``' CRDs, its kubeconfig in ``directory``."""
    server = KubeApiServer(crd_files(directory / "crds", suspend=suspend, handled=handled))
    server.start()
    server.write_kubeconfig(directory / "kubeconfig")
    try:
        yield server
    finally:
        server.stop()
