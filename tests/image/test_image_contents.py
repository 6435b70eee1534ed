"""What the built image holds and how each of its commands starts (issue 24 item 1).

Every console script starts as uid 10001 with a read-only root, all capabilities dropped and
no new privileges (what the chart's securityContext asks); no package installer is left in the
runtime (neither the environment's pip and setuptools nor the wheels a base image keeps to
make one); the OCI labels name the source, the chart's appVersion, the commit and the license;
the ports it exposes are the chart's.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from sandbox.paths import REPO_ROOT
from tests.image.conftest import app_version, podman
from tests.unit.test_image_recipe import chart_ports

pytestmark = pytest.mark.image

#: rq-dashboard 0.9 imports six without declaring it (../shared/facts/image-build.md); the
#: project depends on six itself, so the dashboard starts in the image like the rest.
#: Every command the chart runs: the product's four and the dashboard.
SCRIPTS = (
    "gitops-reverser-receiver",
    "gitops-reverser-watcher",
    "gitops-reverser-branch-worker",
    "gitops-reverser-dispatcher",
    "rq-dashboard",
)
#: As the chart runs a container (values.yaml securityContext), minus its volumes.
LOCKED_DOWN = ("--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges")


def run(image: str, *command: str, user: str = "") -> subprocess.CompletedProcess[str]:
    """``command`` in a locked-down container of ``image`` (as the image's user, or ``user``)."""
    as_user = [f"--user={user}"] if user else []
    return podman("run", "--rm", *LOCKED_DOWN, *as_user, image, *command, check=False)


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_console_script_starts_as_10001_read_only_without_capabilities(
    image: str, script: str
) -> None:
    done = run(image, "sh", "-c", 'id -u; id -g; exec "$0" --help', script)
    assert done.returncode == 0, done.stdout + done.stderr
    uid, gid, *usage = done.stdout.splitlines()
    assert (uid, gid) == ("10001", "10001")
    assert "usage" in "\n".join(usage).lower(), done.stdout


def test_the_root_is_read_only_and_no_capability_is_left(image: str) -> None:
    done = run(
        image,
        "sh",
        "-c",
        "grep CapEff /proc/self/status; touch /opt/gitops-reverser/x 2>&1; "
        "touch /tmp/x && echo tmp",
    )
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["CapEff:", "0000000000000000"], done.stdout
    assert "Read-only file system" in lines[1], done.stdout
    assert lines[2] == "tmp", done.stdout


def test_no_package_installer_is_left(image: str) -> None:
    """Neither pip nor setuptools importable by the environment's Python or the system's, and
    no wheels of them kept to make a venv with (Debian's python3-*-whl)."""
    probe = (
        "import importlib.util as u; print([m for m in ('pip', 'setuptools') if u.find_spec(m)])"
    )
    done = run(
        image,
        "sh",
        "-c",
        f'python -c "{probe}"; /usr/bin/python3 -c "{probe}"; '
        "find / -xdev \\( -name 'pip-*.whl' -o -name 'setuptools-*.whl' \\) -print",
        user="0",  # to search every folder
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"], done.stdout


def _config(image: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(
        podman("image", "inspect", "--format", "{{json .Config}}", image).stdout
    )
    return found


def test_the_labels_name_source_version_commit_and_license(labels: dict[str, str]) -> None:
    """The revision is the commit the image was built at (``-dirty``: from files that differ
    from it); an image reused for the same inputs keeps the commit that built it."""
    revision = labels["org.opencontainers.image.revision"]
    commit = revision.removesuffix("-dirty")
    assert re.fullmatch(r"[0-9a-f]{40}", commit), revision
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO_ROOT, check=False
    )
    assert known.returncode == 0, f"{revision}: not a commit of this repository"
    assert labels["org.opencontainers.image.version"] == app_version()
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://github.com/")


def test_it_exposes_the_charts_ports_and_runs_as_10001(image: str) -> None:
    config = _config(image)
    exposed = config.get("ExposedPorts") or {}
    assert isinstance(exposed, dict)
    assert {int(port.split("/")[0]) for port in exposed} == set(chart_ports().values())
    assert config.get("User") == "10001:10001"
