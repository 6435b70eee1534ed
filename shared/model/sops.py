"""SOPS documents: a Secret written to Git with its payload encrypted for age recipients (P3).

The product encrypts and never decrypts: it holds age *recipients* (public keys) only, so
nothing it stores or logs can reveal a Secret. The file is what the ``sops`` tool writes for
``--encrypted-regex '^(data|stringData)$'`` with age recipients, and what it (and Flux's
kustomize-controller, which uses its code) decrypts; tests decrypt our output with the real
``sops`` binary. The format, as sops 3.x reads it:

- a leaf whose key path has a component matching ``ENCRYPTED_REGEX`` (so ``data.password``,
  but also a label named ``data``) becomes ``ENC[AES256_GCM,data:..,iv:..,tag:..,type:..]``:
  AES-256-GCM under the document's data key, a 32-byte nonce, and the key path joined by
  ``:`` plus a trailing ``:`` as additional data. Every other leaf stays in clear;
- the MAC is SHA-512 over every leaf's bytes in document order (``True``/``False`` for
  booleans), upper-case hex, encrypted like a value with ``lastmodified`` as additional data;
  so the file's key order is the order the MAC was made in, and the writer's stable rendering
  (``ordered_document``) is applied *before* encrypting;
- the data key (32 random bytes) is age-encrypted, ASCII-armoured, once per recipient.

No-op detection without decrypting: a new data key and new nonces make every encryption of
the same Secret a different file, so "same bytes, no write" (M3) cannot work. Each sealed
document carries ``FINGERPRINT_FIELD`` in its ``sops`` block: an HMAC-SHA256 of the plaintext
document and the recipients, keyed by a key that exists only in the watcher's memory (a setting
from a cluster Secret). The writer compares fingerprints, never plaintext; without the key a
fingerprint reveals nothing, and ``sops`` ignores the field (and drops it when a person
re-encrypts the file, which makes the next API edit rewrite it once).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pyrage
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shared.model.manifest import ordered_document
from shared.model.recipients import SopsError, parse_recipients

__all__ = ["SopsError", "parse_recipients"]  # re-exported: the encoder's errors and inputs

#: The keys whose values are encrypted: a Secret's payload. The same regex goes in the
#: document's metadata and in the ``.sops.yaml`` bootstrap file, so ``sops`` run by a person
#: encrypts the same fields.
ENCRYPTED_REGEX = "^(data|stringData)$"
_ENCRYPTED = re.compile(ENCRYPTED_REGEX)
#: The sops format version written in the metadata (the format of sops 3.9 and later).
SOPS_VERSION = "3.9.0"
#: sops uses a 32-byte GCM nonce and a 256-bit data key.
NONCE_BYTES = 32
DATA_KEY_BYTES = 32
_TAG_BYTES = 16
#: Our field in the ``sops`` block (see the module docstring); sops reads past unknown fields.
FINGERPRINT_FIELD = "gitops_reverser_fingerprint"
#: Files a sealed document is written to end in this (and ``.sops.yaml`` rules match it).
SEALED_SUFFIX = ".sops.yaml"
_ARMOR_BEGIN = "-----BEGIN AGE ENCRYPTED FILE-----"
_ARMOR_END = "-----END AGE ENCRYPTED FILE-----"
#: age's armour: standard base64, 64 columns.
_ARMOR_COLUMNS = 64

RandomBytes = Callable[[int], bytes]


def is_sealed(doc: Mapping[str, Any]) -> bool:
    """Whether a document is a SOPS document (it has a ``sops`` block with a MAC)."""
    block = doc.get("sops")
    return isinstance(block, Mapping) and "mac" in block


def stored_fingerprint(doc: Mapping[str, Any]) -> str:
    """The fingerprint a sealed document was written with ("" when none)."""
    block = doc.get("sops")
    value = block.get(FINGERPRINT_FIELD) if isinstance(block, Mapping) else None
    return value if isinstance(value, str) else ""


def fingerprint(doc: Mapping[str, Any], recipients: tuple[str, ...], key: bytes) -> str:
    """HMAC-SHA256 of the plaintext document and the recipients, under ``key``: equal exactly
    when a new encryption would hold the same plaintext for the same readers."""
    if not key:
        raise SopsError("a fingerprint needs a non-empty key")
    text = json.dumps([doc, sorted(recipients)], sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _encrypted(path: list[str]) -> bool:
    return any(_ENCRYPTED.search(part) for part in path)


def _leaves(node: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every leaf in document order with its key path (list items share their list's path)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _leaves(value, [*path, str(key)])
    elif isinstance(node, list):
        for item in node:
            yield from _leaves(item, path)
    else:
        yield path, node


def _typed(value: Any) -> tuple[bytes, str, bytes]:
    """(the bytes encrypted, sops's type name, the bytes the MAC hashes) of a leaf."""
    if value is None:
        return b"", "str", b""
    if isinstance(value, bool):
        return (b"true" if value else b"false"), "bool", (b"True" if value else b"False")
    if isinstance(value, int):
        text = str(value).encode()
        return text, "int", text
    if isinstance(value, float):
        text = repr(value).encode()
        return text, "float", text
    if isinstance(value, str):
        return value.encode(), "str", value.encode()
    raise SopsError(f"a {type(value).__name__} value cannot be encrypted by sops")


def encrypt_value(plain: bytes, kind: str, key: bytes, nonce: bytes, additional: str) -> str:
    """One ``ENC[AES256_GCM,...]`` value."""
    sealed = AESGCM(key).encrypt(nonce, plain, additional.encode())
    data, tag = sealed[:-_TAG_BYTES], sealed[-_TAG_BYTES:]

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"ENC[AES256_GCM,data:{b64(data)},iv:{b64(nonce)},tag:{b64(tag)},type:{kind}]"


def armor(binary: bytes) -> str:
    """age's ASCII armour of an age file."""
    text = base64.b64encode(binary).decode()
    lines = [text[i : i + _ARMOR_COLUMNS] for i in range(0, len(text), _ARMOR_COLUMNS)]
    return "\n".join([_ARMOR_BEGIN, *lines, _ARMOR_END]) + "\n"


def _encrypt_tree(node: Any, path: list[str], key: bytes, random: RandomBytes) -> Any:
    if isinstance(node, Mapping):
        return {k: _encrypt_tree(v, [*path, str(k)], key, random) for k, v in node.items()}
    if isinstance(node, list):
        return [_encrypt_tree(item, path, key, random) for item in node]
    if not _encrypted(path) or node is None or node == "":
        return node  # sops leaves empty strings and nulls as they are
    plain, kind, _ = _typed(node)
    return encrypt_value(plain, kind, key, random(NONCE_BYTES), ":".join(path) + ":")


def mac(doc: Mapping[str, Any]) -> str:
    """sops's MAC of a plaintext document (its ``sops`` block excluded), before encryption."""
    digest = hashlib.sha512()
    for _, value in _leaves({k: v for k, v in doc.items() if k != "sops"}, []):
        digest.update(_typed(value)[2])
    return digest.hexdigest().upper()


def seal(
    doc: Mapping[str, Any],
    recipients: tuple[str, ...],
    *,
    now: datetime,
    random: RandomBytes,
    fingerprint_key: bytes,
) -> dict[str, Any]:
    """The SOPS document of ``doc`` (a sanitised object) for ``recipients``: payload encrypted
    under a fresh data key, everything else in clear, in the writer's key order."""
    if not recipients:
        raise SopsError("no age recipient given")
    ordered = ordered_document(doc)
    data_key = random(DATA_KEY_BYTES)
    lastmodified = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sealed: dict[str, Any] = _encrypt_tree(ordered, [], data_key, random)
    age_keys = [pyrage.x25519.Recipient.from_str(r) for r in recipients]
    sealed["sops"] = {
        "age": [
            {"recipient": r, "enc": armor(pyrage.encrypt(data_key, [k]))}
            for r, k in zip(recipients, age_keys, strict=True)
        ],
        "lastmodified": lastmodified,
        "mac": encrypt_value(
            mac(ordered).encode(), "str", data_key, random(NONCE_BYTES), lastmodified
        ),
        "encrypted_regex": ENCRYPTED_REGEX,
        "version": SOPS_VERSION,
        FINGERPRINT_FIELD: fingerprint(doc, recipients, fingerprint_key),
    }
    return sealed


def sops_config(recipients: tuple[str, ...]) -> bytes:
    """The ``.sops.yaml`` bootstrap file (P4): ``sops`` run by a person in the folder encrypts
    ``*.sops.yaml`` files as the product does, for the same recipients."""
    lines = [
        "# Written by gitops-reverser: the creation rule it encrypts Secrets with, so that",
        "# `sops edit` in this folder encrypts for the same age recipients.",
        "creation_rules:",
        "  - path_regex: '.*\\.sops\\.ya?ml$'",
        f"    encrypted_regex: '{ENCRYPTED_REGEX}'",
        f"    age: '{','.join(recipients)}'",
    ]
    return ("\n".join(lines) + "\n").encode()
