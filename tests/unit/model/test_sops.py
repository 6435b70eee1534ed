"""shared/model/sops.py: the SOPS document the product writes for a Secret (P3), checked from
the format's rules with the data key and nonces injected; the real ``sops`` binary decrypts it
in tests/integration/sops/test_real_sops.py."""

from __future__ import annotations

import base64
import hashlib
import itertools
from datetime import UTC, datetime

import pyrage
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shared.model import sops

IDENTITY = pyrage.x25519.Identity.generate()
RECIPIENT = str(IDENTITY.to_public())
NOW = datetime(2026, 12, 1, 10, 30, 5, 123456, tzinfo=UTC)
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db", "namespace": "demo", "labels": {"tier": "web"}},
    "type": "Opaque",
    "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="},
    "immutable": True,
}


def _counter() -> sops.RandomBytes:
    """Deterministic 'randomness': the data key is 32 bytes of 1, then nonces 2, 3, ..."""
    seq = itertools.count(1)
    return lambda n: bytes([next(seq)]) * n


def _sealed() -> dict[str, object]:
    return sops.seal(SECRET, (RECIPIENT,), now=NOW, random=_counter(), fingerprint_key=b"k")


def _open(value: str, key: bytes, additional: str) -> bytes:
    fields = dict(part.split(":", 1) for part in value[len("ENC[AES256_GCM,") : -1].split(","))
    sealed = base64.b64decode(fields["data"]) + base64.b64decode(fields["tag"])
    return AESGCM(key).decrypt(base64.b64decode(fields["iv"]), sealed, additional.encode())


def test_payload_values_are_encrypted_under_the_data_key_with_their_path() -> None:
    """P3: data values are ENC[AES256_GCM,...,type:str], additional data ``data:<key>:``."""
    sealed = _sealed()
    data = sealed["data"]
    assert isinstance(data, dict)
    assert data["password"].startswith("ENC[AES256_GCM,data:")
    assert data["password"].endswith(",type:str]")
    assert _open(data["password"], bytes([1]) * 32, "data:password:") == b"aHVudGVyMg=="
    with pytest.raises(Exception):  # noqa: B017 - any authentication failure
        _open(data["password"], bytes([1]) * 32, "data:user:")


def test_everything_else_stays_in_clear_in_the_writers_order() -> None:
    """Only the payload is encrypted; apiVersion, kind, metadata lead (the MAC's order)."""
    sealed = _sealed()
    assert list(sealed)[:3] == ["apiVersion", "kind", "metadata"]
    assert sealed["metadata"] == SECRET["metadata"]
    assert sealed["type"] == "Opaque" and sealed["immutable"] is True


def test_the_mac_is_sha512_of_every_leaf_in_order_encrypted_with_lastmodified() -> None:
    """The MAC covers clear and encrypted leaves (booleans as True/False), upper-case hex."""
    sealed = _sealed()
    block = sealed["sops"]
    assert isinstance(block, dict)
    assert block["lastmodified"] == "2026-12-01T10:30:05Z"
    leaves = [b"v1", b"Secret", b"db", b"demo", b"web"]
    leaves += [b"aHVudGVyMg==", b"YWRtaW4=", b"True", b"Opaque"]
    expected = hashlib.sha512(b"".join(leaves)).hexdigest().upper().encode()
    assert _open(block["mac"], bytes([1]) * 32, "2026-12-01T10:30:05Z") == expected


def test_the_data_key_is_age_encrypted_and_armoured_per_recipient() -> None:
    """Each recipient gets the data key in age's ASCII armour, 64 columns."""
    block = _sealed()["sops"]
    assert isinstance(block, dict)
    (entry,) = block["age"]
    assert entry["recipient"] == RECIPIENT
    lines = entry["enc"].strip().splitlines()
    assert lines[0] == "-----BEGIN AGE ENCRYPTED FILE-----"
    assert lines[-1] == "-----END AGE ENCRYPTED FILE-----"
    assert all(len(line) <= 64 for line in lines[1:-1])
    binary = base64.b64decode("".join(lines[1:-1]))
    assert pyrage.decrypt(binary, [IDENTITY]) == bytes([1]) * 32
    assert block["encrypted_regex"] == "^(data|stringData)$"


def test_a_label_named_data_is_encrypted_like_sops_does() -> None:
    """sops encrypts a leaf when any component of its path matches the regex."""
    doc = {**SECRET, "metadata": {"name": "x", "labels": {"data": "v"}}}
    sealed = sops.seal(doc, (RECIPIENT,), now=NOW, random=_counter(), fingerprint_key=b"k")
    assert sealed["metadata"]["labels"]["data"].startswith("ENC[")  # type: ignore[index]


def test_fingerprint_is_stable_for_the_same_plaintext_and_readers_only() -> None:
    """No-op detection: the same Secret sealed twice has equal fingerprints and different
    ciphertext; another value, recipient or key gives another fingerprint."""
    first = sops.seal(SECRET, (RECIPIENT,), now=NOW, random=_counter(), fingerprint_key=b"k")
    again = sops.seal(
        SECRET, (RECIPIENT,), now=NOW, random=lambda n: b"\x09" * n, fingerprint_key=b"k"
    )
    assert sops.stored_fingerprint(first) == sops.stored_fingerprint(again) != ""
    assert first["data"] != again["data"]
    changed = {**SECRET, "data": {"password": "b3RoZXI=", "user": "YWRtaW4="}}
    other = str(pyrage.x25519.Identity.generate().to_public())
    prints = {
        sops.fingerprint(SECRET, (RECIPIENT,), b"k"),
        sops.fingerprint(changed, (RECIPIENT,), b"k"),
        sops.fingerprint(SECRET, (RECIPIENT, other), b"k"),
        sops.fingerprint(SECRET, (RECIPIENT,), b"other key"),
    }
    assert len(prints) == 4
    assert "aHVudGVyMg" not in sops.stored_fingerprint(first)


def test_recipients_are_checked_and_read_from_a_recipients_file() -> None:
    """A recipients Secret holds one age1 key a line, with # comments; a bad one is named."""
    other = str(pyrage.x25519.Identity.generate().to_public())
    text = f"# team\n{other}\n\n{RECIPIENT}  # ci\n"
    assert sops.parse_recipients(text) == tuple(sorted((other, RECIPIENT)))
    with pytest.raises(sops.SopsError, match="not an age recipient"):
        sops.parse_recipients(["age1nope"])
    with pytest.raises(sops.SopsError, match="no age recipient"):
        sops.parse_recipients("# nothing\n")


def test_is_sealed_and_the_bootstrap_rule() -> None:
    """A plain Secret is not sealed; ``.sops.yaml`` names the same regex and recipients."""
    assert sops.is_sealed(_sealed()) and not sops.is_sealed(SECRET)
    config = sops.sops_config((RECIPIENT,)).decode()
    assert "encrypted_regex: '^(data|stringData)$'" in config
    assert RECIPIENT in config and "path_regex: '.*\\.sops\\.ya?ml$'" in config
