"""What the image installs is what the build context holds (issue 13 part 1).

The Dockerfile installs the project with ``pip install -c constraints.txt .`` from the files
``.dockerignore`` admits. This copies exactly those files, builds the wheel from them as that
step does (offline: the build backend is the one pinned in the dev environment), and checks the
wheel: the product's packages and the receiver's gunicorn settings file are in it, the sandbox
and the tests are not, and its entry points are the console scripts the Procfile names.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sandbox.paths import REPO_ROOT
from tests.unit.test_image import SCRIPTS, dockerignore, ignored

pytestmark = pytest.mark.integration


def _context(into: Path) -> None:
    """Copy the files Docker would send as the build context (tracked or not, caches aside)."""
    patterns = dockerignore()
    for path in REPO_ROOT.rglob("*"):
        relative = path.relative_to(REPO_ROOT).as_posix()
        if path.is_file() and not ignored(relative, patterns):
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def test_the_wheel_built_from_the_context_holds_the_product_and_its_scripts(
    tmp_path: Path,
) -> None:
    context, out = tmp_path / "context", tmp_path / "dist"
    _context(context)
    assert not (context / "sandbox").exists() and not (context / "tests").exists()
    offline = ("--no-deps", "--no-build-isolation", "--no-index")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", *offline, str(context), "-w", str(out)],
        check=True,
        capture_output=True,
    )
    [wheel] = out.glob("gitops_reverser-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    assert "services/receiver/gunicorn.conf.py" in names
    assert {"shared/health.py", "services/watcher/__main__.py"} <= names
    assert not [n for n in names if n.startswith(("sandbox/", "tests/", "bench/"))]
    for script in SCRIPTS:
        assert f"{script} = " in scripts, scripts
