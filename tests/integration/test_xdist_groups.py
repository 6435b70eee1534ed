"""make test-rest runs on pytest-xdist workers with ``--dist loadgroup``; tests/conftest.py keeps
on one worker what must stay together (docs/testing.md). These run pytest the way make does,
with tests/conftest.py as a plugin, over a module written here, and read which worker ran what.

The first fails if groups stop reaching the controller: pytest-xdist 3.8 names a group in an
attribute pytest 9 no longer reads, and the tests of a module that shared one fixture then ran
on different workers (each made the fixture again, and the chart run's module, whose second test
reads what its first did, failed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.paths import REPO_ROOT

pytestmark = pytest.mark.integration

#: make test-rest's pytest, with tests/conftest.py loaded as a plugin for a module outside tests/.
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider"]
PYTEST += ["-n", "3", "--dist", "loadgroup"]

MODULE = """
import os
from pathlib import Path

import pytest

OUT = Path(os.environ["GROUPS_OUT"])


def _ran(name: str) -> None:
    with OUT.open("a") as out:
        out.write(f"{name} {os.environ.get('PYTEST_XDIST_WORKER', '-')}\\n")


@pytest.fixture(scope="module")
def shared() -> str:
    _ran("fixture")
    return "made once"


@pytest.mark.parametrize("n", range(6))
def test_shares(shared: str, n: int) -> None:
    _ran(f"shares-{n}")


@pytest.mark.parametrize("n", range(12))
def test_alone(n: int) -> None:
    _ran(f"alone-{n}")
"""


def _run(tmp_path: Path) -> dict[str, list[str]]:
    """Run the module on three workers; which workers ran each kind of test."""
    (tmp_path / "test_groups.py").write_text(MODULE)
    out = tmp_path / "ran.txt"
    done = subprocess.run(
        [*PYTEST, str(tmp_path / "test_groups.py")],
        cwd=REPO_ROOT,
        env={**_env(), "GROUPS_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, list[str]] = {}
    for line in out.read_text().splitlines():
        name, worker = line.split()
        workers.setdefault(name.split("-")[0], []).append(worker)
    return workers


def _env() -> dict[str, str]:
    """This environment less pytest-xdist's worker variables (this test may run on a worker)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def test_a_module_that_shares_a_fixture_runs_on_one_worker_which_makes_it_once(
    tmp_path: Path,
) -> None:
    workers = _run(tmp_path)
    assert len(workers["shares"]) == 6
    assert len(set(workers["shares"])) == 1, workers["shares"]
    assert workers["fixture"] == workers["shares"][:1], "made once, by that worker"
    assert len(workers["alone"]) == 12
