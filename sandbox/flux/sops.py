"""kustomize-controller's SOPS decryption, as the double does it (``spec.decryption``).

Flux decrypts every built object that carries a ``sops`` block before applying it, with the age
identities of the Secret ``spec.decryption.secretRef`` names (in the Kustomization's namespace):
each data entry whose key ends in ``.agekey`` holds age identities, one a line. This module is
written from the SOPS file format, not from the product's encoder, and
tests/sandbox/unit/test_flux_sops.py pins it to files the real ``sops`` binary wrote: a value is
``ENC[AES256_GCM,data:,iv:,tag:,type:]`` (AES-256-GCM, the key path joined by ``:`` plus ``:``
as additional data), the data key is age-encrypted per recipient, and the MAC (SHA-512 over
every leaf in order, encrypted with ``lastmodified`` as additional data) must match, or the
object is not applied. Only age is modelled (no PGP, KMS or Vault), and only YAML objects.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pyrage
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

#: Secret data keys holding age identities (Flux's convention for ``spec.decryption``).
AGE_KEY_SUFFIX = ".agekey"
_VALUE = re.compile(
    r"^ENC\[AES256_GCM,data:(?P<data>[^,]*),iv:(?P<iv>[^,]+),tag:(?P<tag>[^,]+),"
    r"type:(?P<type>str|int|float|bool|bytes|comment)\]$"
)
_SUFFIX_KEYS = ("unencrypted_suffix", "encrypted_suffix")
_REGEX_KEYS = ("unencrypted_regex", "encrypted_regex")


class DecryptionFailed(ValueError):
    """An object whose SOPS block cannot be decrypted or whose MAC does not match."""


def identities_of(secret_data: Mapping[str, str]) -> list[pyrage.x25519.Identity]:
    """The age identities of a decryption Secret's (base64) ``data``."""
    found = []
    for key, value in secret_data.items():
        if not key.endswith(AGE_KEY_SUFFIX):
            continue
        for line in base64.b64decode(value).decode().splitlines():
            text = line.strip()
            if text and not text.startswith("#"):
                found.append(pyrage.x25519.Identity.from_str(text))
    return found


def is_encrypted(obj: Mapping[str, Any]) -> bool:
    """An object sops encrypted: a ``sops`` block with a ``mac``."""
    block = obj.get("sops")
    return isinstance(block, Mapping) and "mac" in block


def _data_key(block: Mapping[str, Any], identities: list[pyrage.x25519.Identity]) -> bytes:
    for entry in block.get("age") or []:
        armored = str(entry.get("enc", ""))
        lines = [ln for ln in armored.strip().splitlines() if not ln.startswith("-----")]
        try:
            key: bytes = pyrage.decrypt(base64.b64decode("".join(lines)), identities)
            return key
        except Exception:  # pyrage.DecryptError: not for these identities, try the next
            continue
    raise DecryptionFailed("no age identity of the decryption Secret opens the data key")


def _decrypt_value(text: str, key: bytes, additional: str) -> tuple[Any, bytes]:
    """(the plaintext value, its MAC bytes)."""
    match = _VALUE.match(text)
    if match is None:
        raise DecryptionFailed(f"not a sops value: {text[:40]!r}")
    sealed = base64.b64decode(match["data"]) + base64.b64decode(match["tag"])
    try:
        plain = AESGCM(key).decrypt(base64.b64decode(match["iv"]), sealed, additional.encode())
    except InvalidTag as err:
        raise DecryptionFailed(f"a value at {additional!r} does not authenticate") from err
    kind = match["type"]
    if kind == "bool":
        value: Any = plain.decode().lower() == "true"
        return value, b"True" if value else b"False"
    if kind == "int":
        return int(plain), plain
    if kind == "float":
        return float(plain), plain
    return plain.decode(), plain


class _Walk:
    def __init__(self, block: Mapping[str, Any], key: bytes) -> None:
        self.key = key
        self.digest = hashlib.sha512()
        self.rule = next(
            ((k, block[k]) for k in (*_SUFFIX_KEYS, *_REGEX_KEYS) if block.get(k)), None
        )

    def encrypted(self, path: list[str]) -> bool:
        if self.rule is None:  # sops's default: unencrypted_suffix "_unencrypted"
            return not any(part.endswith("_unencrypted") for part in path)
        name, value = self.rule
        if name == "unencrypted_suffix":
            return not any(part.endswith(value) for part in path)
        if name == "encrypted_suffix":
            return any(part.endswith(value) for part in path)
        hit = any(re.search(value, part) for part in path)
        return hit if name == "encrypted_regex" else not hit

    def tree(self, node: Any, path: list[str]) -> Any:
        if isinstance(node, Mapping):
            return {k: self.tree(v, [*path, str(k)]) for k, v in node.items()}
        if isinstance(node, list):
            return [self.tree(item, path) for item in node]
        if self.encrypted(path) and isinstance(node, str) and node:
            value, mac_bytes = _decrypt_value(node, self.key, ":".join(path) + ":")
        else:
            value, mac_bytes = node, _mac_bytes(node)
        self.digest.update(mac_bytes)
        return value


def _mac_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"True" if value else b"False"
    return str(value).encode()


def decrypt(obj: Mapping[str, Any], identities: list[pyrage.x25519.Identity]) -> dict[str, Any]:
    """The plaintext object (its ``sops`` block removed); DecryptionFailed when it cannot be
    decrypted with ``identities`` or its MAC does not match."""
    block = obj["sops"]
    key = _data_key(block, identities)
    walk = _Walk(block, key)
    plain = walk.tree({k: v for k, v in obj.items() if k != "sops"}, [])
    stored, _ = _decrypt_value(str(block.get("mac", "")), key, str(block.get("lastmodified", "")))
    if stored != walk.digest.hexdigest().upper():
        raise DecryptionFailed("MAC mismatch: the file was changed without its data key")
    return dict(plain)


def decrypt_all(
    objects: Iterable[dict[str, Any]], identities: list[pyrage.x25519.Identity]
) -> list[dict[str, Any]]:
    """Every object, the encrypted ones decrypted (DecryptionFailed names the first that fails)."""
    result = []
    for obj in objects:
        if not is_encrypted(obj):
            result.append(obj)
            continue
        meta = obj.get("metadata") or {}
        try:
            result.append(decrypt(obj, identities))
        except (DecryptionFailed, KeyError, ValueError) as err:
            name = f"{obj.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
            raise DecryptionFailed(f"failed to decrypt {name}: {err}") from err
    return result
