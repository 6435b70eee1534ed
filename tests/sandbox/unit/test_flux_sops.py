"""The Flux double's SOPS decryption (sandbox/flux/sops.py) is pinned to the real format: a file
the real ``sops`` 3.11.0 binary wrote (``sops encrypt --age ... --encrypted-regex
'^(data|stringData)$'``, kept verbatim in data/ with the test-only age identity it was made for)
decrypts to its plaintext; a changed value or MAC, or another identity, is refused (P3)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pyrage
import pytest
import yaml

from sandbox.flux import sops

#: A test-only age identity; the file below was encrypted for its recipient by real sops.
IDENTITY = "AGE-SECRET-KEY-1RSZDFZUP5V70R8AK8RD0GM0EU9JE08MLPPJQ3AFJZC0WVC48SU6SZ7JHMN"
WRITTEN_BY_SOPS = (Path(__file__).parent / "data" / "secret-by-sops-3.11.0.yaml").read_text()
PLAINTEXT = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db", "namespace": "demo", "labels": {"tier": "backend"}},
    "data": {"password": "aHVudGVyMg=="},
    "stringData": {"port": 5432, "note": "two words"},
    "immutable": True,
    "type": "Opaque",
}


def _file() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WRITTEN_BY_SOPS)
    return loaded


def _identities() -> list[pyrage.x25519.Identity]:
    secret = {"age.agekey": base64.b64encode(f"# test key\n{IDENTITY}\n".encode()).decode()}
    return sops.identities_of(secret)


def test_a_file_real_sops_wrote_decrypts_to_its_plaintext() -> None:
    """P3: values of every type (str, int), the MAC over clear and encrypted leaves alike."""
    assert sops.is_encrypted(_file())
    assert sops.decrypt(_file(), _identities()) == PLAINTEXT


def test_only_agekey_entries_hold_identities() -> None:
    """Flux reads identities from the decryption Secret's ``*.agekey`` entries only."""
    other = {"age.txt": base64.b64encode(IDENTITY.encode()).decode()}
    assert sops.identities_of(other) == []
    assert len(_identities()) == 1


def test_a_changed_clear_field_fails_the_mac() -> None:
    """A clear field is covered by the MAC too: changing it without the data key is caught."""
    changed = _file()
    changed["metadata"]["labels"]["tier"] = "frontend"
    with pytest.raises(sops.DecryptionFailed, match="MAC mismatch"):
        sops.decrypt(changed, _identities())


def test_a_value_moved_to_another_key_does_not_authenticate() -> None:
    """The key path is the additional data: a value copied under another key fails."""
    moved = _file()
    moved["stringData"]["note"] = moved["data"]["password"]
    with pytest.raises(sops.DecryptionFailed, match="does not authenticate"):
        sops.decrypt(moved, _identities())


def test_another_identity_cannot_open_the_data_key() -> None:
    """Without the recipient's identity there is no data key, so nothing is applied."""
    stranger = [pyrage.x25519.Identity.generate()]
    with pytest.raises(sops.DecryptionFailed, match="no age identity"):
        sops.decrypt(_file(), stranger)


def test_decrypt_all_names_the_object_that_fails_and_passes_clear_ones() -> None:
    """Plain objects pass through untouched; a failure names kind, namespace and name."""
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert sops.decrypt_all([plain, _file()], _identities()) == [plain, PLAINTEXT]
    with pytest.raises(sops.DecryptionFailed, match="Secret/demo/db"):
        sops.decrypt_all([_file()], [pyrage.x25519.Identity.generate()])
