"""A folder whose content cannot be read is refused, whatever the reason, and nothing is raised
(T4): the writer's ``Folder`` over a real work tree. The process tests of the same findings are
in ``tests/e2e/test_tenant_faults_e2e.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.githost.outside import git
from services.branch_worker.folder import Folder
from shared.git.workspace import Workspace

pytestmark = pytest.mark.integration

KUSTOMIZATION = b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    workspace = Workspace(tmp_path / "ws", str(bare), "main")
    workspace.reset(None)
    return workspace


def _loop(ws: Workspace) -> None:
    """Two links at the repository root that point at each other."""
    (ws.directory / "a").symlink_to("b")
    (ws.directory / "b").symlink_to("a")


def test_a_kustomization_resource_through_a_link_out_of_the_tree(ws: Workspace) -> None:
    """N8: ``PathEscapes`` came out of the render and stalled the whole branch."""
    (ws.directory / "outside").symlink_to("/etc")
    ws.write("apps/kustomization.yaml", KUSTOMIZATION + b"resources:\n- ../outside/\n")
    verdict = Folder(ws, "apps").verdict
    assert (verdict.accepted, verdict.reason, verdict.offending) == (
        False,
        "UnsupportedContent",
        "outside/kustomization.yaml",
    )
    assert "leaves the work tree" in (verdict.detail or "")


def test_a_kustomization_resource_through_a_loop_of_links(ws: Workspace) -> None:
    """The same class: Python 3.11's ``resolve`` raises ``RuntimeError`` for a loop."""
    _loop(ws)
    ws.write("apps/kustomization.yaml", KUSTOMIZATION + b"resources:\n- ../a/\n")
    verdict = Folder(ws, "apps").verdict
    assert (verdict.accepted, verdict.reason) == (False, "UnsupportedContent")
    assert "loop of symbolic links" in (verdict.detail or "")


def test_a_gittarget_folder_through_a_loop_of_links(ws: Workspace) -> None:
    _loop(ws)
    verdict = Folder(ws, "a/apps").verdict
    assert (verdict.accepted, verdict.reason) == (False, "PathOutsideTarget")


def test_a_gittargetignore_the_matcher_cannot_take(ws: Workspace) -> None:
    """N1: ``re2.Error`` came out of ``Ignore.parse`` and stopped the process."""
    ws.write("apps/.gittargetignore", b"a" * 100_000)
    ws.write("apps/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    verdict = Folder(ws, "apps").verdict
    assert (verdict.accepted, verdict.reason, verdict.offending) == (
        False,
        "UnsupportedContent",
        "apps/.gittargetignore",
    )
    assert "longer than 8192 characters" in (verdict.detail or "")
