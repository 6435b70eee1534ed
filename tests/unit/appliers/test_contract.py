"""The applier package's layer contract fails on a violation (issue 8: each new contract).

``shared.appliers`` reads and stamps only through ``shared.kube``: it may not import a client
library, the store, the git adapter, a service or the sandbox. The project copy and the
import-linter run are ``tests/unit/test_layers.py``'s, so both tests lint the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_layers import _lint, project_copy

__all__ = ["project_copy"]  # the fixture, used by name below

CONTRACT = "shared.appliers reaches Kubernetes only through shared.kube"


@pytest.mark.parametrize(
    "code", ["import kubernetes\n", "import redis\n", "import shared.store\n", "import git\n"]
)
def test_the_applier_contract_fails_on_a_violation(project_copy: Path, code: str) -> None:
    (project_copy / "shared/appliers/probe.py").write_text(code)
    result = _lint(project_copy)
    assert result.returncode != 0
    assert f"{CONTRACT} BROKEN" in result.stdout
