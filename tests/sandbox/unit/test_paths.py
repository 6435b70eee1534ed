"""Without ``../shared/crds`` the tests stop with one message that says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import paths

ROOT = Path(__file__).resolve().parents[3]
#: Tests that read the third-party schemas (not this module: a broken check must not recurse).
SCHEMA_TESTS = ("tests/sandbox/unit/test_schema.py", "tests/sandbox/unit/test_cel.py")


def test_missing_crds_raise_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.SHARED_DIR_ENV, str(tmp_path))
    with pytest.raises(paths.MissingCrdsError) as raised:
        paths.third_party_crd_files()
    assert str(raised.value) == (
        f"third-party CRDs not found at {tmp_path / 'crds'}; "
        "set GITOPS_REVERSER_SHARED_DIR to the folder holding crds/"
    )


def test_a_session_that_needs_them_stops_once_with_that_message(tmp_path: Path) -> None:
    """One line instead of a KeyError per schema test (the review counted 21)."""
    env = {**os.environ, paths.SHARED_DIR_ENV: str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCHEMA_TESTS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=50,
    )
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert output.count("third-party CRDs not found at") == 1, output
    assert "KeyError" not in output
    assert " passed" not in output
