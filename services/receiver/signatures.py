"""What every host's verifier is built from: headers, form bodies and the constant-time checks.

The verifiers themselves are one per Git host (``services.receiver.hosts``); the rules they
share (R2) live here so that no host can skip one:

- the comparison is constant-time (``hmac.compare_digest``), over bytes;
- an empty secret or an empty/absent signature is refused: go-github skips the check when
  both are empty (facts: webhooks-git-libs.md §1.1), we never do;
- only a SHA-256 HMAC in hex is accepted (no SHA-1: it is the weaker legacy header).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

FORM = "application/x-www-form-urlencoded"
#: A SHA-256 HMAC in hex, the only form accepted (no SHA-1: it is the weaker legacy header).
_HEX256 = re.compile(r"[0-9a-fA-F]{64}")
#: Form fields parsed at most; a webhook form has one (``payload``).
_MAX_FORM_FIELDS = 16


@dataclass(frozen=True, slots=True)
class Verified:
    """The delivery is authentic; ``document`` is the JSON text it carries (not yet parsed)."""

    document: bytes


@dataclass(frozen=True, slots=True)
class Refused:
    """The delivery is not shown to be authentic; ``reason`` names no secret."""

    reason: str


Verdict = Verified | Refused
#: A host's verifier: (headers, raw body, content type, secret) -> verdict.
Verifier = Callable[[Mapping[str, str], bytes, str, bytes], Verdict]


class CaseFolded(Mapping[str, str]):
    """Request headers looked up by lower-case name, as the app hands them over: ``header``
    finds a name here with one lookup, present or not, and never scans the others."""


def header(headers: Mapping[str, str], name: str) -> str:
    """A header's value by case-insensitive name ("" when absent).

    One lookup in a ``CaseFolded`` mapping (what the app passes); any other mapping is
    searched when the lower-case name is not a key.
    """
    wanted = name.lower()
    value = headers.get(wanted)
    if value is not None:
        return value
    if isinstance(headers, CaseFolded):
        return ""
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def first_header(headers: Mapping[str, str], names: tuple[str, ...]) -> str:
    """The first non-empty (stripped) value among ``names``, in that order ("" when none)."""
    return next((v for v in (header(headers, n).strip() for n in names) if v), "")


def media_type(content_type: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return content_type.split(";", 1)[0].strip().lower()


def form_payload(body: bytes) -> bytes | None:
    """The decoded ``payload`` field of a urlencoded body; None when absent or repeated."""
    try:
        pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=_MAX_FORM_FIELDS)
    except ValueError:
        return None
    values = [value for name, value in pairs if name == b"payload"]
    return values[0] if len(values) == 1 else None


def wire_bytes(value: str) -> bytes:
    """A header value's bytes as sent: WSGI hands headers over decoded as latin-1 (PEP 3333)."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace")


def _hmac_matches(secret: bytes, data: bytes, hex_signature: str) -> bool:
    if not _HEX256.fullmatch(hex_signature):
        return False
    expected = hmac.digest(secret, data, "sha256")  # one C call; hmac.new is Python on top
    return hmac.compare_digest(expected, bytes.fromhex(hex_signature))


def prefixed(value: str) -> str | None:
    """The hex of ``sha256=<hex>``; None for another algorithm or no prefix."""
    algorithm, sep, hex_part = value.strip().partition("=")
    if not sep or algorithm.lower() != "sha256":
        return None
    return hex_part


def check(secret: bytes, data: bytes, hex_signature: str | None, name: str) -> Refused | None:
    """None when ``hex_signature`` is the HMAC-SHA256 of ``data`` under a non-empty secret."""
    if not secret:
        return Refused("the receiver has no usable secret")
    if not hex_signature:
        return Refused(f"no {name} signature")
    if not _hmac_matches(secret, data, hex_signature):
        return Refused(f"{name} signature does not match")
    return None


def check_prefixed(
    headers: Mapping[str, str], name: str, data: bytes, secret: bytes
) -> Refused | None:
    """``check`` of a ``sha256=<hex>`` signature in header ``name`` (GitHub's form, which
    Bitbucket and generic-hmac use under other header names)."""
    signature = header(headers, name)
    return check(secret, data, prefixed(signature) if signature else "", name)


def raw_body_document(body: bytes, content_type: str) -> bytes:
    """The JSON of a verified raw body: itself, or its form's ``payload`` (empty if none)."""
    if media_type(content_type) == FORM:
        return form_payload(body) or b""
    return body
