"""docs/crds.md "Signed commits" and "ClusterWatchRule" name the reasons the code sets (P6), so
a person reading a condition finds it explained."""

from __future__ import annotations

from pathlib import Path

from services.branch_worker.signing import SIGNING_KEY_INVALID
from services.watcher.signing import (
    GENERATED,
    SIGNING_SECRET_NOT_FOUND,
    SIGNING_SECRET_NOT_OWNED,
    SIGNING_SECRET_UNREADABLE,
)
from shared.decide.cluster_rules import CLUSTER_SCOPE_NOT_ADMITTED, NAMESPACE_NOT_AUTHORIZED
from shared.git.signing import PASSPHRASE, PRIVATE_KEY, PUBLIC_KEY

DOC = (Path(__file__).resolve().parents[3] / "docs" / "crds.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n## ", start + len(title))
    return DOC[start : end if end > 0 else None]


def test_the_signing_section_names_every_reason_and_key() -> None:
    section = _section("### Signed commits")
    reasons = (
        SIGNING_KEY_INVALID,
        SIGNING_SECRET_NOT_FOUND,
        SIGNING_SECRET_NOT_OWNED,
        SIGNING_SECRET_UNREADABLE,
    )
    for word in reasons:
        assert f"`{word}`" in section
    for key in (PRIVATE_KEY, PASSPHRASE, PUBLIC_KEY, GENERATED):
        assert f"`{key}" in section


def test_the_cluster_watch_rule_section_names_every_refusal() -> None:
    section = _section("## ClusterWatchRule")
    for word in (CLUSTER_SCOPE_NOT_ADMITTED, NAMESPACE_NOT_AUTHORIZED, "GitTargetNotFound"):
        assert f"`{word}`" in section
    assert "spec.clusterScoped.accessFrom" in section
