"""The layer rules are enforced: import-linter fails on a violation and passes without one.

The contracts live in pyproject.toml (``[tool.importlinter]``); ``make lint`` runs them. This
test runs the same contracts over a copy of the packages, once as they are and once with a
module that breaks a rule, so a contract that could never fail would be caught here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_project(dest: Path) -> None:
    for package in ("shared", "services", "sandbox"):
        shutil.copytree(
            ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=where,
        env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    _copy_project(tmp_path)
    return tmp_path


def test_contracts_pass_on_the_project(project_copy: Path) -> None:
    result = _lint(project_copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "code", "contract"),
    [
        ("shared/decide/probe.py", "import redis\n", "shared.decide is pure"),
        ("shared/decide/probe.py", "import shared.store\n", "shared.decide is pure"),
        ("services/watcher/probe.py", "import redis\n", "only shared.store touches Redis"),
        ("services/receiver/probe.py", "import kubernetes\n", "only shared.kube touches"),
        ("shared/store/probe.py", "import git\n", "only shared.git touches git"),
        ("services/dispatcher/probe.py", "import services.watcher\n", "do not import each other"),
        ("shared/kube/probe.py", "import sandbox.paths\n", "never imports the sandbox"),
        ("shared/decide/probe.py", "import time\n", "shared.decide is pure"),
        ("shared/decide/probe.py", "from os import environ\n", "shared.decide is pure"),
        ("shared/decide/probe.py", "import threading\n", "shared.decide is pure"),
        ("shared/decide/probe.py", "import shared.settings\n", "shared.decide is pure"),
        ("shared/model/probe.py", "import shared.decide.quiet\n", "adapters over rules over"),
        ("shared/gotemplate/probe.py", "import os\n", "shared.gotemplate is pure"),
        ("shared/gotemplate/probe.py", "import shared.model.ids\n", "shared.gotemplate is pure"),
        ("shared/gotemplate/probe.py", "import shared.model.ids\n", "adapters over rules over"),
        ("shared/kustomize/probe.py", "import os\n", "shared.kustomize is pure"),
        ("shared/kustomize/probe.py", "import subprocess\n", "shared.kustomize is pure"),
        ("shared/kustomize/probe.py", "import shared.git.workspace\n", "shared.kustomize is pure"),
        ("shared/kustomize/probe.py", "import shared.decide.quiet\n", "adapters over rules over"),
        ("shared/model/probe.py", "import shared.kustomize\n", "adapters over rules over"),
        ("services/dispatcher/probe.py", "import rq\n", "only shared.store touches Redis"),
        ("shared/settings.py", "import redis\n", "only shared.store touches Redis"),
        ("shared/metrics.py", "import kubernetes\n", "only shared.kube touches"),
        ("shared/logging.py", "import git\n", "only shared.git touches git"),
        ("shared/process.py", "import rq\n", "only shared.store touches Redis"),
        ("services/receiver/verify.py", "import shared.store\n", "verifiers and parsers do no"),
        ("services/receiver/routing.py", "import socket\n", "verifiers and parsers do no"),
        ("services/receiver/deliveries.py", "import flask\n", "verifiers and parsers do no"),
        ("services/branch_worker/windows.py", "import services.branch_worker.holds\n", "parts"),
        ("services/branch_worker/holds.py", "import services.branch_worker.branch\n", "parts"),
        ("services/branch_worker/tips.py", "import services.branch_worker.conditions\n", "parts"),
        ("services/branch_worker/worktree.py", "import services.branch_worker.pushing\n", "parts"),
        ("services/branch_worker/pushing.py", "import services.branch_worker.intake\n", "parts"),
        ("services/branch_worker/waits.py", "import services.branch_worker.backlog\n", "parts"),
    ],
)
def test_a_violation_fails(project_copy: Path, module: str, code: str, contract: str) -> None:
    """The probe import is added to the module (a new module, or the end of an existing one)."""
    with (project_copy / module).open("a", encoding="utf-8") as probe:
        probe.write(code)
    result = _lint(project_copy)
    assert result.returncode != 0
    assert contract in result.stdout
    assert "BROKEN" in result.stdout
