"""The image tier (issue 24 item 2): the product's image, built here, run by podman.

``image`` builds the image once per set of inputs (``scripts/build-image --no-archive``; the
tag carries a hash of the build context and the recipe, so a run whose inputs did not change
reuses it, and two worktrees never run each other's image). ``podman`` runs it with
``scripts/podman/containers.conf`` (../shared/facts/image-build.md).

On a machine without podman the tier tries ``apt-get install -y podman runc mmdebstrap`` (as
``.ci/run`` does); only when that fails too does it skip, and then it says so in the summary
in capitals: the image was not tested. A podman that is installed but cannot build or run is
a failure.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sandbox.paths import REPO_ROOT
from tests.e2e.conftest import pytest_runtest_makereport
from tests.unit.test_image import dockerignore, ignored

#: A failing test shows the tail of every container's log, as in the e2e tier.
__all__ = ["pytest_runtest_makereport"]

#: What the build reads besides its context.
RECIPE = ("Dockerfile", "scripts/build-image", "scripts/podman/containers.conf")
CONTAINERS_CONF = REPO_ROOT / "scripts" / "podman" / "containers.conf"
#: Builds from other worktrees on this machine wait for each other (podman's storage is shared).
LOCK = Path("/var/tmp/gitops-reverser-image-build.lock")
#: A clean build takes ~2 minutes on a quiet machine; far more on a busy one.
BUILD_S = 1800
#: The skip reason of an image tier that could not run; tests/conftest.py's summary looks for it.
NOT_TESTED = "THE IMAGE WAS NOT TESTED"
Completed = subprocess.CompletedProcess[str]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "image: builds the image and runs it with podman")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test of the tier builds the image (the session's ``image``): its time bound is
    the build's, not the suite's per-test one."""
    tier = [item for item in items if item.get_closest_marker("image")]
    if tier:
        tier[0].add_marker(pytest.mark.timeout(BUILD_S + 300))


def app_version() -> str:
    """The chart's appVersion: the image's version label and tag."""
    chart = yaml.safe_load((REPO_ROOT / "charts" / "gitops-reverser" / "Chart.yaml").read_text())
    return str(chart["appVersion"])


def inputs_digest() -> str:
    """A hash of every file the build sends (``.dockerignore``) and of the recipe."""
    patterns = dockerignore()
    files = [REPO_ROOT / name for name in RECIPE]
    for top in sorted(REPO_ROOT.iterdir()):
        if ignored(top.name, patterns):
            continue  # an allowlist: nothing under an ignored top-level entry is sent
        candidates = sorted(top.rglob("*")) if top.is_dir() else [top]
        files += [
            path
            for path in candidates
            if path.is_file() and not ignored(path.relative_to(REPO_ROOT).as_posix(), patterns)
        ]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def run_bounded(
    command: list[str], *, timeout: float, check: bool = False, env: dict[str, str] | None = None
) -> Completed:
    """``command``'s result, its output caught in files rather than pipes, within ``timeout``.

    ``subprocess.run(..., capture_output=True, timeout=...)`` kills the command at its timeout
    and then reads its pipes to their end, unbounded: a process the command left behind that
    still holds them (podman's conmon, buildah's helpers) held the test, past pytest's own
    limit when that came first. Here the command runs in a session of its own, the whole
    session is killed at the timeout, and nothing waits on a pipe."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            command, stdout=out, stderr=err, text=True, env=env, start_new_session=True
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(command, code, out.read(), err.read())
    if check:
        done.check_returncode()
    return done


def podman(*args: str, check: bool = True, timeout: float = 300) -> Completed:
    """``podman ARGS`` with the project's containers.conf; its output."""
    return run_bounded(["podman", *args], env=podman_env(), check=check, timeout=timeout)


def _install_podman() -> str | None:
    """Install podman as .ci/run does; None when done, else why not."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return "podman is not installed and apt-get cannot install it here (not root or no apt)"
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "podman", "runc", "mmdebstrap"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}"
    return None


@pytest.fixture(scope="session")
def image() -> str:
    """The image of this tree (built now unless one of the same inputs exists)."""
    if shutil.which("podman") is None:
        why = _install_podman()
        if why is not None:
            warnings.warn(f"{NOT_TESTED}: {why}", stacklevel=1)
            pytest.skip(f"{NOT_TESTED}: {why}")
    tag = f"localhost/gitops-reverser:inputs-{inputs_digest()}"
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if podman("image", "exists", tag, check=False).returncode != 0:
            build = [str(REPO_ROOT / "scripts" / "build-image"), "--no-archive", "--tag", tag]
            done = run_bounded(build, timeout=BUILD_S)
            output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            assert done.returncode == 0, f"scripts/build-image failed:\n{output}"
    return tag


@pytest.fixture(scope="session")
def labels(image: str) -> dict[str, str]:
    """The image's labels."""
    found = podman("image", "inspect", "--format", "{{json .Labels}}", image).stdout
    parsed: dict[str, str] = yaml.safe_load(found)
    return parsed


@pytest.fixture
def containers() -> Iterator[list[str]]:
    """Names of containers a test starts; each is removed afterwards, whatever happened."""
    names: list[str] = []
    yield names
    for name in names:
        podman("rm", "-f", "--ignore", name, check=False)
