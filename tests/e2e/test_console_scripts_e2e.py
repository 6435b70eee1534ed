"""Every command that starts a process starts, with only the runtime dependencies.

Outside check 7 (issue 23).

rq-dashboard 0.9 imports ``six`` without declaring it; once ``six`` was no longer pulled in by
anything else, ``make up`` died on a fresh clone and the chart's dashboard would crash-loop,
while the old test only checked that the entry point existed. Here each command is started as a
process from the environment's ``bin`` with ``--help`` (which imports the code it runs): every
console script of the project, every Procfile entry (as ``make up`` runs it, through a shell)
and every command the chart gives a container of the product's image. The receiver's
application, which gunicorn imports only in its workers, is loaded with ``--check-config``, and
every module of the product (the dispatcher's job module is imported only when a job runs) is
imported once.

Each process sees only what the image installs (``pip install -c constraints.txt .``): the
development extras are installed here too, so ``runtime_only/sitecustomize.py`` makes their
modules fail to import, and a dependency that only a test tool pulls in cannot hide a missing
declaration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sandbox.paths import REPO_ROOT
from sandbox.processes import procfile
from tests.integration.chart.render import CHART, render

pytestmark = pytest.mark.e2e

DISTRIBUTION = "gitops-reverser"
#: The environment's own commands (the Makefile's .venv, or whichever runs the tests).
BIN = Path(sys.executable).parent
RUNTIME_ONLY = Path(__file__).with_name("runtime_only")
#: A command that loads its code ends well within this; a bound on the wait, not a measure.
START_S = 120.0
#: The chart with every process of the image enabled.
EVERY_PROCESS = {"receiver": {"enabled": True}, "dashboard": {"enabled": True}}


def _requirements(name: str, extras: frozenset[str]) -> list[Requirement]:
    """What an installed distribution requires when installed with ``extras``."""
    found = []
    for line in metadata.distribution(name).requires or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in extras | {""}):
            found.append(requirement)
    return found


@cache
def runtime_distributions() -> frozenset[str]:
    """The project and everything it requires without extras, transitively (the image's)."""
    seen: dict[str, frozenset[str]] = {}
    todo = [(DISTRIBUTION, frozenset[str]())]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in seen and extras <= seen[key]:
            continue
        seen[key] = seen.get(key, frozenset()) | extras
        todo += [(r.name, frozenset(r.extras)) for r in _requirements(name, seen[key])]
    return frozenset(seen)


@cache
def not_installed() -> frozenset[str]:
    """Top-level modules that only distributions outside the runtime set provide."""
    runtime = runtime_distributions()
    return frozenset(
        module
        for module, dists in metadata.packages_distributions().items()
        if not any(canonicalize_name(d) in runtime for d in dists)
    )


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(RUNTIME_ONLY)
    env["TEST_RUNTIME_ONLY_NOT_INSTALLED"] = ",".join(sorted(not_installed()))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def start(command: list[str] | str) -> subprocess.CompletedProcess[str]:
    """Run a command (a list, or a shell line) to its end, as the image would, from the repo."""
    return subprocess.run(
        command,
        shell=isinstance(command, str),
        cwd=REPO_ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=START_S,
        check=False,
    )


def assert_started(command: list[str] | str) -> None:
    done = start(command)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}{done.stdout}"
    assert "Traceback" not in done.stderr, done.stderr


def _scripts() -> list[str]:
    found = metadata.entry_points(group="console_scripts")
    return sorted(ep.name for ep in found if ep.dist and ep.dist.name == DISTRIBUTION)


#: The built-in Redis's server container runs the image's Debian redis-server, not one of our
#: commands; tests/image/test_image_redis.py starts it from the image as the chart does.
REDIS_SERVER = ("StatefulSet", "redis")


def _chart_commands() -> dict[str, list[str]]:
    """Each container of the product's image in the rendered chart that runs one of our
    commands: its command and args."""
    image = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
    found: dict[str, list[str]] = {}
    for obj in render(EVERY_PROCESS):
        pod = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            if (obj["kind"], container["name"]) == REDIS_SERVER:
                continue
            if container["image"].startswith(f"{image}:"):
                name = f"{obj['metadata']['name']}/{container['name']}"
                found[name] = container.get("command", []) + container.get("args", [])
    return found


def test_the_processes_here_see_only_the_runtime_dependencies() -> None:
    """The check itself: a development tool is not importable, a runtime dependency is."""
    assert {"rq_dashboard", "redis", "flask"} <= {
        m for m, d in metadata.packages_distributions().items() if m not in not_installed()
    }
    assert {"pytest", "hypothesis", "honcho"} <= not_installed()
    python = str(BIN / "python")
    assert_started([python, "-c", "import redis, flask"])
    refused = start([python, "-c", "import pytest"])
    assert refused.returncode == 1 and "not a runtime dependency" in refused.stderr


@pytest.mark.parametrize("script", _scripts())
def test_every_console_script_starts(script: str) -> None:
    assert (BIN / script).exists(), f"{script} is not installed in {BIN}"
    assert_started([str(BIN / script), "--help"])


@pytest.mark.parametrize("name", sorted(procfile()))
def test_every_procfile_entry_starts_as_make_up_runs_it(name: str) -> None:
    command = procfile()[name].strip()
    assert (BIN / command.split()[0]).exists(), f"{name}: {command} is not installed in {BIN}"
    assert_started(f"exec {command} --help")


def test_every_command_the_chart_runs_starts() -> None:
    commands = _chart_commands()
    assert {"gr-gitops-reverser-dashboard/dashboard"} <= set(commands), sorted(commands)
    for name, command in commands.items():
        assert command and (BIN / command[0]).exists(), f"{name}: {command} is not installed"
        assert_started([str(BIN / command[0]), *command[1:], "--help"])


def test_the_receiver_loads_its_application() -> None:
    """gunicorn imports the app only in a worker; ``--check-config`` loads it and exits."""
    assert_started([str(BIN / "gitops-reverser-receiver"), "--check-config"])


def test_every_module_of_the_product_imports() -> None:
    """Modules a process imports only later (the dispatcher's job) need their packages too."""
    program = (
        "import importlib, pkgutil, services, shared\n"
        "for package in (services, shared):\n"
        "    prefix = package.__name__ + '.'\n"
        "    for module in pkgutil.walk_packages(package.__path__, prefix):\n"
        "        importlib.import_module(module.name)\n"
    )
    assert_started([str(BIN / "python"), "-c", program])
