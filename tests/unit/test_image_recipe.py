"""The Dockerfile against the chart and the project (issue 24 items 1 and 10), read without a
build (tests/image builds and runs it).

``EXPOSE`` lists every port the chart's containers listen on; the version label's default is
the chart's appVersion and the license label the project's; the runtime stage keeps no
package installer and the build stage leaves pip and setuptools out of the environment it
hands over; the SBOM stage exists for ``scripts/build-image``.
"""

from __future__ import annotations

import re
import tomllib

import yaml

from sandbox.paths import REPO_ROOT
from tests.unit.test_image import dockerfile

CHART = REPO_ROOT / "charts" / "gitops-reverser"


def chart_ports() -> dict[str, int]:
    """The port each of the chart's containers listens on (values.yaml)."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    return {
        "receiver": int(values["receiver"]["port"]),
        "watcher": int(values["watcher"]["metricsPort"]),
        "branchWorker": int(values["branchWorker"]["metricsPort"]),
        "dispatcher": int(values["dispatcher"]["metricsPort"]),
        "dashboard": int(values["dashboard"]["port"]),
    }


def _arg_default(stage_args: list[str], name: str) -> str:
    for rest in stage_args:
        key, _, default = rest.partition("=")
        if key == name:
            return default
    raise AssertionError(f"no ARG {name}")


def test_expose_lists_every_port_the_chart_uses() -> None:
    runtime = dockerfile()[-1]
    exposed = {int(port) for rest in runtime.args("EXPOSE") for port in rest.split()}
    assert exposed == set(chart_ports().values())


def test_the_version_label_defaults_to_the_charts_app_version() -> None:
    runtime = dockerfile()[-1]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert _arg_default(runtime.args("ARG"), "VERSION") == str(chart["appVersion"])
    labels = " ".join(runtime.args("LABEL"))
    assert 'org.opencontainers.image.version="${VERSION}"' in labels
    assert 'org.opencontainers.image.revision="${REVISION}"' in labels


def test_the_license_label_is_the_projects() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    runtime = dockerfile()[-1]
    labels = " ".join(runtime.args("LABEL"))
    found = re.search(r'org\.opencontainers\.image\.licenses="([^"]+)"', labels)
    assert found and found[1] == project["license"]["text"]
    assert re.search(r'org\.opencontainers\.image\.source="https://', labels)


def test_no_installer_reaches_the_runtime() -> None:
    build, sbom, runtime = dockerfile()
    assert re.search(r"pip uninstall -y -q pip setuptools", " ".join(build.args("RUN")))
    installs = " ".join(runtime.args("RUN"))
    assert "python3-pip-whl" in installs and "python3-setuptools-whl" in installs
    assert sbom.name == "sbom" and sbom.base == "build"
