"""The chart rendered by Helm itself (``helm-python-sdk`` embeds Helm's Go SDK; no binary).

Every chart test goes through ``render``: it checks the values against
``values.schema.json`` first, as ``helm install`` does, then renders the templates and splits
them into objects. ``Rendered`` answers the questions the tests ask of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import helm_python as helm
import yaml

from sandbox.paths import REPO_ROOT

CHART = REPO_ROOT / "charts" / "gitops-reverser"
RELEASE = "gr"
NAMESPACE = "gitops-reverser"
#: The console scripts the image gives each process (issue 13 section 1).
COMMANDS = {
    "watcher": "gitops-reverser-watcher",
    "branch-worker": "gitops-reverser-branch-worker",
    "dispatcher": "gitops-reverser-dispatcher",
    "receiver": "gitops-reverser-receiver",
}
Obj = dict[str, Any]


@dataclass(frozen=True)
class Rendered:
    """The objects of one render, and NOTES.txt."""

    objects: list[Obj]
    notes: str

    def __iter__(self) -> Iterator[Obj]:
        return iter(self.objects)

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str) -> Obj:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
        return found[0]

    def names(self, kind: str) -> set[str]:
        return {o["metadata"]["name"] for o in self.of_kind(kind)}

    def deployment(self, component: str) -> Obj:
        return self.one("Deployment", f"{RELEASE}-gitops-reverser-{component}")

    def container(self, component: str) -> Obj:
        containers: list[Obj] = self.deployment(component)["spec"]["template"]["spec"]["containers"]
        assert len(containers) == 1
        return containers[0]

    def components(self) -> set[str]:
        """The process kinds with a Deployment."""
        return {
            o["metadata"]["labels"]["app.kubernetes.io/component"]
            for o in self.of_kind("Deployment")
        }


def render_files(
    values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE, release: str = RELEASE
) -> dict[str, str]:
    """The rendered text of each template (values validated against the schema first)."""
    given = dict(values or {})
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(given)
        files: dict[str, str] = chart.render(given, name=release, namespace=namespace)
    return files


def render(values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE) -> Rendered:
    """Validate ``values`` against the schema and render the chart as release ``gr``."""
    files = render_files(values, namespace)
    objects: list[Obj] = []
    notes = ""
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return Rendered(objects, notes)


def lint() -> dict[str, Any]:
    """Helm's own lint of the chart (findings as data)."""
    found: dict[str, Any] = helm.lint(str(CHART))
    return found
